"""Inserting and replacing event rows (protocol.md §15.2). Every helper takes an open
connection inside the caller's transaction and costs one round trip per call."""

from collections.abc import Mapping, Sequence

import orjson

from orchestra.nostr.event import Event, d_tag, kind_class
from orchestra.relay.access import event_channel_id
from orchestra.relay.storage import DbConnection

_INSERT_EVENTS_CTE = """
WITH new_events AS (
  INSERT INTO events (id, pubkey, kind, created_at, content, tags, sig, raw, h_tag, channel_id, d_tag)
  SELECT id, pubkey, kind, created_at, content, tags::jsonb, sig, raw, h_tag::uuid, channel_id::uuid, d_tag
  FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::text[],
              $8::text[], $9::text[], $10::text[], $11::text[])
    AS t(id, pubkey, kind, created_at, content, tags, sig, raw, h_tag, channel_id, d_tag)
  ON CONFLICT (id) DO NOTHING
  RETURNING id
), new_tags AS (
  INSERT INTO event_tags (event_id, name, value, kind, created_at)
  SELECT t.event_id, t.name, t.value, t.kind, t.created_at
  FROM unnest($12::text[], $13::text[], $14::text[], $15::int[], $16::bigint[])
    AS t(event_id, name, value, kind, created_at)
  JOIN new_events n ON n.id = t.event_id
)"""
INSERT_EVENTS = _INSERT_EVENTS_CTE + " SELECT id FROM new_events"
# The same, plus the channels' `last_activity_at` (§9.10): one atomic statement, one round trip.
INSERT_EVENTS_AND_TOUCH = (
    _INSERT_EVENTS_CTE
    + """, touched AS (
  UPDATE channels c SET last_activity_at = GREATEST(c.last_activity_at, t.at)
  FROM unnest($17::uuid[], $18::bigint[]) AS t(channel_id, at) WHERE c.channel_id = t.channel_id
)
SELECT id FROM new_events"""
)

# One primary-key probe per id (the LIMIT keeps the planner from flattening the lateral
# subquery): both `id = ANY(<array>)` and a plain join on unnest were planned as sequential
# scans for some batch sizes, which made every write cost grow with the table.
LOOKUP_IDS = """
SELECT e.id, e.h_tag::text AS h
FROM unnest($1::text[]) AS wanted(id),
     LATERAL (SELECT id, h_tag FROM events WHERE events.id = wanted.id LIMIT 1) AS e
"""
CURRENT_REPLACEABLE = "SELECT id, created_at FROM events WHERE pubkey = $1 AND kind = $2"
CURRENT_ADDRESSABLE = (
    "SELECT id, created_at FROM events WHERE pubkey = $1 AND kind = $2 AND d_tag = $3"
)
DELETE_EVENT = "DELETE FROM events WHERE id = $1"


def db_text(value: str) -> str:
    """PostgreSQL text cannot hold NUL; such characters are stored as U+FFFD in the indexed
    columns (the served `raw` keeps the exact event). Queries map filter values the same way."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def is_indexed_tag(tag: Sequence[str]) -> bool:
    return len(tag) >= 2 and len(tag[0]) == 1 and tag[0].isascii() and tag[0].isalpha()


async def insert_events(
    connection: DbConnection,
    events: Sequence[Event],
    activity: Mapping[str, int] | None = None,
) -> set[str]:
    """Insert events and their tag rows, and raise channels' `last_activity_at` to the given
    times; returns the ids actually inserted (others existed)."""
    columns: list[list[object]] = [[] for _ in range(11)]
    tag_columns: list[list[object]] = [[] for _ in range(5)]
    for event in events:
        addressable = kind_class(event.kind) == "addressable"
        tags_json = db_text(orjson.dumps(event.tags).decode())
        row = (
            event.id,
            event.pubkey,
            event.kind,
            event.created_at,
            db_text(event.content),
            tags_json,
            event.sig,
            event.raw,
            event.first_tag_value("h"),
            event_channel_id(event),
            db_text(d_tag(event)) if addressable else None,
        )
        for column, value in zip(columns, row, strict=True):
            column.append(value)
        for tag in event.tags:
            if is_indexed_tag(tag):
                for tag_column, tag_value in zip(
                    tag_columns,
                    (event.id, tag[0], db_text(tag[1]), event.kind, event.created_at),
                    strict=True,
                ):
                    tag_column.append(tag_value)
    if activity:
        rows = await connection.fetch(
            INSERT_EVENTS_AND_TOUCH, *columns, *tag_columns, list(activity), list(activity.values())
        )
    else:
        rows = await connection.fetch(INSERT_EVENTS, *columns, *tag_columns)
    return {row["id"] for row in rows}


def newer_wins(new: Event, current_id: str, current_created_at: int) -> bool:
    """§6: greater created_at wins; on equal created_at the lexically lower id wins."""
    return new.created_at > current_created_at or (
        new.created_at == current_created_at and new.id < current_id
    )


async def replace_event(connection: DbConnection, event: Event) -> bool:
    """Store a replaceable/addressable event unless a newer version exists; False if it lost."""
    if kind_class(event.kind) == "addressable":
        current = await connection.fetchrow(
            CURRENT_ADDRESSABLE, event.pubkey, event.kind, db_text(d_tag(event))
        )
    else:
        current = await connection.fetchrow(CURRENT_REPLACEABLE, event.pubkey, event.kind)
    if current is not None:
        if not newer_wins(event, current["id"], current["created_at"]):
            return False
        await connection.execute(DELETE_EVENT, current["id"])
    await insert_events(connection, [event])
    return True
