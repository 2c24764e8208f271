"""Filter -> SQL (protocol.md §15.3), with the read rule (§10) inside the query so `limit`
counts only events the reader may read.

A query returns ids, times and sizes, plus the `raw` of small events while an in-memory
budget lasts; larger results are read afterwards in pages (`fetch_raw`), so a REQ never holds
its whole result in memory (relay/stored.py).
"""

from collections.abc import Sequence
from typing import NamedTuple

import asyncpg

from orchestra.nostr.filters import Filter
from orchestra.nostr.kinds import Kind
from orchestra.relay.channels import UUID_RE
from orchestra.relay.storage.rows import db_text

# Events up to this size come back with the query, up to INLINE_BUDGET_BYTES per REQ.
INLINE_RAW_BYTES = 2048
INLINE_BUDGET_BYTES = 1024 * 1024


# One primary-key probe per id, as the writer's LOOKUP_IDS (storage/writes.py) explains.
FETCH_RAW = """
SELECT e.id, e.raw
FROM unnest($1::text[]) AS wanted(id),
     LATERAL (SELECT id, raw FROM events WHERE events.id = wanted.id LIMIT 1) AS e
"""


class Row(NamedTuple):
    raw: str | None  # None: too large to come inline, read it with `fetch_raw`
    id: str
    created_at: int
    size: int  # bytes of raw


def build_query(f: Filter, reader: str | None, inline_bytes: int = 0) -> tuple[str, list[object]]:
    """One SELECT for one filter (the caller skips filters that match nothing): rows of
    (raw, id, created_at, size) with raw NULL when it is longer than `inline_bytes`."""
    params: list[object] = [reader, inline_bytes]
    where: list[str] = []

    def param(value: object) -> str:
        params.append(value)
        return f"${len(params)}"

    def member_of(column: str, values: Sequence[object], sql_type: str) -> str:
        # `=` for a single value lets PostgreSQL walk an index in ORDER BY order and stop at
        # LIMIT; `= ANY(array)` cannot.
        if len(values) == 1:
            return f"{column} = {param(values[0])}::{sql_type}"
        return f"{column} = ANY({param(values)}::{sql_type}[])"

    if f.ids is not None:
        where.append(member_of("e.id", sorted(f.ids), "text"))
    if f.authors is not None:
        where.append(member_of("e.pubkey", sorted(f.authors), "text"))
    if f.kinds is not None:
        where.append(member_of("e.kind", sorted(f.kinds), "int"))
    for letter, values in sorted(f.tags.items()):
        if letter == "h":
            # Stored h-tagged events carry exactly one h tag holding a lowercase UUID (§9.2).
            where.append(
                member_of("e.h_tag", sorted(v for v in values if UUID_RE.match(v)), "uuid")
            )
        else:
            tag_values = sorted(db_text(v) for v in values)
            where.append(
                "EXISTS (SELECT 1 FROM event_tags t WHERE t.event_id = e.id"
                f" AND t.name = {param(letter)} AND {member_of('t.value', tag_values, 'text')})"
            )
    if f.since is not None:
        where.append(f"e.created_at >= {param(f.since)}")
    if f.until is not None:
        where.append(f"e.created_at <= {param(f.until)}")
    where.append("(e.channel_id IS NULL OR c.visibility = 'open' OR m.pubkey IS NOT NULL)")
    where.append(f"(e.kind <> {int(Kind.MEMORY)} OR e.pubkey = $1)")
    sql = (
        "SELECT CASE WHEN octet_length(e.raw) <= $2 THEN e.raw END AS raw,"
        " e.id, e.created_at, octet_length(e.raw) AS size FROM events e"
        " LEFT JOIN channels c ON c.channel_id = e.channel_id"
        " LEFT JOIN channel_members m ON m.channel_id = e.channel_id AND m.pubkey = $1"
        f" WHERE {' AND '.join(where)}"
        f" ORDER BY e.created_at DESC, e.id ASC LIMIT {param(f.limit)}"
    )
    return sql, params


async def query_events(
    connection: asyncpg.Connection | asyncpg.Pool,
    filters: Sequence[Filter],
    reader: str | None,
    inline_budget: int = INLINE_BUDGET_BYTES,
) -> list[Row]:
    """Union of the filters' newest readable events, de-duplicated, newest first, ties by id."""
    seen: dict[str, Row] = {}
    for f in filters:
        if f.limit == 0 or f.matches_nothing():
            continue
        sql, params = build_query(f, reader, INLINE_RAW_BYTES if inline_budget > 0 else 0)
        for raw, event_id, created_at, size in await connection.fetch(sql, *params):
            if event_id not in seen:
                seen[event_id] = Row(raw, event_id, created_at, size)
                inline_budget -= size if raw is not None else 0
    return sorted(seen.values(), key=lambda row: (-row.created_at, row.id))


async def fetch_raw(
    connection: asyncpg.Connection | asyncpg.Pool, ids: list[str]
) -> dict[str, str]:
    """`raw` of the given events that still exist (a replaced version is gone)."""
    rows = await connection.fetch(FETCH_RAW, ids)
    return {row["id"]: row["raw"] for row in rows}
