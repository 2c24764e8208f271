"""Channel state writes (protocol.md §9, §15.2): the channel row, its members and the relay's
state events, inside the caller's transaction."""

from orchestra.nostr.event import Event
from orchestra.nostr.keys import Keys
from orchestra.nostr.kinds import Kind
from orchestra.relay.channels import Channel, ChannelCache, build_state_events
from orchestra.relay.storage import DbConnection
from orchestra.relay.storage.rows import replace_event

UPSERT_CHANNEL = """
INSERT INTO channels (channel_id, name, about, visibility, channel_type, ttl_seconds, creator,
                      created_at, archived, archived_at, last_activity_at, create_event_id)
VALUES ($1::uuid, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (channel_id) DO UPDATE SET
  name = EXCLUDED.name, about = EXCLUDED.about, visibility = EXCLUDED.visibility,
  channel_type = EXCLUDED.channel_type, ttl_seconds = EXCLUDED.ttl_seconds,
  archived = EXCLUDED.archived, archived_at = EXCLUDED.archived_at,
  last_activity_at = EXCLUDED.last_activity_at
"""
UPSERT_MEMBERS = """
INSERT INTO channel_members (channel_id, pubkey, role, added_by, added_at)
SELECT $1::uuid, pubkey, role, $4, $5 FROM unnest($2::text[], $3::text[]) AS t(pubkey, role)
ON CONFLICT (channel_id, pubkey) DO UPDATE SET role = EXCLUDED.role
"""
DELETE_MEMBERS = (
    "DELETE FROM channel_members WHERE channel_id = $1::uuid AND pubkey = ANY($2::text[])"
)


async def store_channel_state(
    connection: DbConnection,
    cache: ChannelCache,
    relay_keys: Keys,
    channel: Channel | None,
    kinds: tuple[Kind, ...],
    actor: str,
    now: int,
) -> list[Event]:
    """Write the channel row, member changes and new state events (inside a transaction)."""
    if channel is None:
        return []
    await connection.execute(
        UPSERT_CHANNEL,
        channel.channel_id,
        channel.name,
        channel.about,
        channel.visibility,
        channel.channel_type,
        channel.ttl_seconds,
        channel.creator,
        channel.created_at,
        channel.archived,
        channel.archived_at,
        channel.last_activity_at,
        channel.create_event_id,
    )
    old = cache.get(channel.channel_id)
    old_members = old.members if old is not None else {}
    removed = [pk for pk in old_members if pk not in channel.members]
    changed = {pk: role for pk, role in channel.members.items() if old_members.get(pk) != role}
    if removed:
        await connection.execute(DELETE_MEMBERS, channel.channel_id, removed)
    if changed:
        await connection.execute(
            UPSERT_MEMBERS,
            channel.channel_id,
            list(changed),
            list(changed.values()),
            actor,
            now,
        )
    state_events = build_state_events(channel, kinds, relay_keys, cache, now)
    for state_event in state_events:
        await replace_event(connection, state_event)
    return state_events
