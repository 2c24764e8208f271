"""Filter -> SQL (protocol.md §15.3), with the read rule (§10) inside the query so `limit`
counts only events the reader may read.

A REQ is one statement (its filters' SELECTs in a UNION): ids, times and sizes, plus the `raw`
of small events while an in-memory budget lasts; larger results are read afterwards in pages (`fetch_raw`), so a REQ never holds
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


def _filter_select(f: Filter, params: list[object]) -> str:
    """One SELECT for one filter (the caller skips filters that match nothing): its newest
    `limit` readable events as (id, created_at, size); `$1` is the reader."""
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
    return (
        "SELECT e.id, e.created_at, octet_length(e.raw) AS size FROM events e"
        " LEFT JOIN channels c ON c.channel_id = e.channel_id"
        " LEFT JOIN channel_members m ON m.channel_id = e.channel_id AND m.pubkey = $1"
        f" WHERE {' AND '.join(where)}"
        f" ORDER BY e.created_at DESC, e.id ASC LIMIT {param(f.limit)}"
    )


def build_query(
    filters: Sequence[Filter], reader: str | None, inline_budget: int = INLINE_BUDGET_BYTES
) -> tuple[str, list[object]] | None:
    """One statement for a REQ's filters (None when none can match): the union of each
    filter's newest readable events, de-duplicated, newest first, ties by id, as rows of
    (raw, id, created_at, size), with `raw` only for events up to INLINE_RAW_BYTES while
    `inline_budget` bytes of them last (counted newest first), NULL otherwise.

    PostgreSQL de-duplicates and orders the union, so the relay decodes each event of the
    result once, however many of the filters return it."""
    params: list[object] = [reader, INLINE_RAW_BYTES, inline_budget]
    selects = [
        f"({_filter_select(f, params)})"
        for f in filters
        if f.limit != 0 and not f.matches_nothing()
    ]
    if not selects:
        return None
    sql = (
        f"WITH matched AS ({' UNION '.join(selects)}),"
        " ranked AS (SELECT id, created_at, size, sum(CASE WHEN size <= $2 THEN size END)"
        " OVER (ORDER BY created_at DESC, id ASC) AS inline_bytes FROM matched)"
        " SELECT CASE WHEN r.size <= $2 AND r.inline_bytes <= $3"
        " THEN (SELECT raw FROM events WHERE events.id = r.id) END AS raw,"
        " r.id, r.created_at, r.size FROM ranked r ORDER BY r.created_at DESC, r.id ASC"
    )
    return sql, params


async def query_events(
    connection: asyncpg.Connection | asyncpg.Pool,
    filters: Sequence[Filter],
    reader: str | None,
    inline_budget: int = INLINE_BUDGET_BYTES,
) -> list[Row]:
    """Union of the filters' newest readable events, de-duplicated, newest first, ties by id."""
    query = build_query(filters, reader, inline_budget)
    if query is None:
        return []
    sql, params = query
    return [Row(*record) for record in await connection.fetch(sql, *params)]


async def fetch_raw(
    connection: asyncpg.Connection | asyncpg.Pool, ids: list[str]
) -> dict[str, str]:
    """`raw` of the given events that still exist (a replaced version is gone)."""
    rows = await connection.fetch(FETCH_RAW, ids)
    return {row["id"]: row["raw"] for row in rows}
