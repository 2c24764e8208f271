"""Channel state (protocol.md §9): the in-memory cache and the relay-signed state events.

Tables `channels` and `channel_members` are authoritative; this cache mirrors them and is
updated only after a commit, by the single writer task (storage/writes.py).
"""

import dataclasses
import re
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from orchestra.nostr.event import Event, sign_event
from orchestra.nostr.keys import Keys
from orchestra.nostr.kinds import CHANNEL_STATE_KINDS, Kind
from orchestra.relay.storage import DbConnection

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ROLE_ORDER = {"owner": 0, "admin": 1, "member": 2, "bot": 3}


@dataclass(frozen=True)
class Channel:
    channel_id: str
    name: str
    about: str
    visibility: str
    channel_type: str
    ttl_seconds: int | None
    creator: str
    created_at: int
    archived: bool
    archived_at: int | None
    last_activity_at: int
    create_event_id: str
    members: dict[str, str] = field(default_factory=dict)  # pubkey -> role

    @property
    def is_private(self) -> bool:
        return self.visibility == "private"

    def role_of(self, pubkey: str | None) -> str | None:
        return self.members.get(pubkey) if pubkey is not None else None

    def admins(self) -> list[str]:
        return sorted(pk for pk, role in self.members.items() if role == "admin")

    def replace(self, **changes: Unpack["ChannelChanges"]) -> "Channel":
        return dataclasses.replace(self, **changes)


class ChannelChanges(TypedDict, total=False):
    """What channel operations change: metadata edits, membership, archiving, activity."""

    name: str
    about: str
    visibility: str
    ttl_seconds: int | None
    archived: bool
    archived_at: int | None
    last_activity_at: int
    members: dict[str, str]


class ChannelCache:
    """All channels with their members, plus the newest state-event `created_at` per kind."""

    def __init__(self) -> None:
        self.channels: dict[str, Channel] = {}
        self.state_created_at: dict[tuple[int, str], int] = {}

    def get(self, channel_id: str | None) -> Channel | None:
        return self.channels.get(channel_id) if channel_id is not None else None

    def put(self, channel: Channel) -> None:
        self.channels[channel.channel_id] = channel

    def can_read(self, channel_id: str, reader: str | None) -> bool:
        channel = self.channels.get(channel_id)
        if channel is None or not channel.is_private:
            return True
        return reader is not None and reader in channel.members

    async def load(self, connection: DbConnection, relay_pubkey: str) -> None:
        rows = await connection.fetch("SELECT * FROM channels")
        members: dict[str, dict[str, str]] = {}
        for row in await connection.fetch(
            "SELECT channel_id::text, pubkey, role FROM channel_members"
        ):
            members.setdefault(row["channel_id"], {})[row["pubkey"]] = row["role"]
        self.channels = {}
        for row in rows:
            channel_id = str(row["channel_id"])
            self.channels[channel_id] = Channel(
                channel_id=channel_id,
                name=row["name"],
                about=row["about"],
                visibility=row["visibility"],
                channel_type=row["channel_type"],
                ttl_seconds=row["ttl_seconds"],
                creator=row["creator"],
                created_at=row["created_at"],
                archived=row["archived"],
                archived_at=row["archived_at"],
                last_activity_at=row["last_activity_at"],
                create_event_id=row["create_event_id"],
                members=members.get(channel_id, {}),
            )
        state_rows = await connection.fetch(
            "SELECT kind, d_tag, created_at FROM events WHERE pubkey = $1 AND kind = ANY($2::int[])",
            relay_pubkey,
            list(CHANNEL_STATE_KINDS),
        )
        self.state_created_at = {(r["kind"], r["d_tag"]): r["created_at"] for r in state_rows}


def metadata_tags(channel: Channel) -> list[list[str]]:
    tags: list[list[str]] = [["d", channel.channel_id], ["name", channel.name]]
    if channel.about:
        tags.append(["about", channel.about])
    tags.append(["private"] if channel.is_private else ["public"])
    if channel.is_private:
        tags.append(["closed"])
    tags.append(["t", channel.channel_type])
    if channel.ttl_seconds is not None:
        tags.append(["ttl", str(channel.ttl_seconds)])
    if channel.archived:
        tags.append(["archived", "true"])
    tags.append(["P", channel.creator])
    tags.append(["created_at", str(channel.created_at)])
    return tags


def admins_tags(channel: Channel) -> list[list[str]]:
    return [
        ["d", channel.channel_id],
        ["p", channel.creator, "owner"],
        *(["p", pubkey, "admin"] for pubkey in channel.admins()),
    ]


def members_tags(channel: Channel) -> list[list[str]]:
    ordered = sorted(channel.members.items(), key=lambda item: (ROLE_ORDER[item[1]], item[0]))
    return [["d", channel.channel_id], *(["p", pubkey, role] for pubkey, role in ordered)]


_TAG_BUILDERS = {
    Kind.CHANNEL_METADATA: metadata_tags,
    Kind.CHANNEL_ADMINS: admins_tags,
    Kind.CHANNEL_MEMBERS: members_tags,
}


def build_state_events(
    channel: Channel, kinds: tuple[Kind, ...], relay_keys: Keys, cache: ChannelCache, now: int
) -> list[Event]:
    """Sign the new versions; `created_at` = max(now, previous + 1) so versions always order."""
    events = []
    for kind in kinds:
        previous = cache.state_created_at.get((kind, channel.channel_id), -1)
        created_at = max(now, previous + 1)
        events.append(sign_event(relay_keys, kind, "", _TAG_BUILDERS[kind](channel), created_at))
    return events


def note_state_events(cache: ChannelCache, events: list[Event]) -> None:
    """Record committed state versions so the next one is strictly newer."""
    for event in events:
        cache.state_created_at[(event.kind, event.tags[0][1])] = event.created_at
