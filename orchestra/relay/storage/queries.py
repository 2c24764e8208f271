"""Filter -> SQL (protocol.md §15.3), with the read rule (§10) inside the query so `limit`
counts only events the reader may read."""

from collections.abc import Sequence

import asyncpg

from orchestra.nostr.filters import Filter
from orchestra.relay.access import MEMORY_KIND
from orchestra.relay.channels import UUID_RE
from orchestra.relay.storage.rows import db_text

Row = tuple[str, str, int]  # raw, id, created_at


def build_query(f: Filter, reader: str | None) -> tuple[str, list[object]]:
    """One SELECT for one filter (the caller skips filters that match nothing)."""
    params: list[object] = [reader]
    where: list[str] = []

    def param(value: object) -> str:
        params.append(value)
        return f"${len(params)}"

    def member_of(column: str, values: list, sql_type: str) -> str:
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
    where.append(f"(e.kind <> {MEMORY_KIND} OR e.pubkey = $1)")
    sql = (
        "SELECT e.raw, e.id, e.created_at FROM events e"
        " LEFT JOIN channels c ON c.channel_id = e.channel_id"
        " LEFT JOIN channel_members m ON m.channel_id = e.channel_id AND m.pubkey = $1"
        f" WHERE {' AND '.join(where)}"
        f" ORDER BY e.created_at DESC, e.id ASC LIMIT {param(f.limit)}"
    )
    return sql, params


async def query_events(
    connection: asyncpg.Connection | asyncpg.Pool, filters: Sequence[Filter], reader: str | None
) -> list[Row]:
    """Union of the filters' newest readable events, de-duplicated, newest first, ties by id."""
    seen: dict[str, Row] = {}
    for f in filters:
        if f.limit == 0 or f.matches_nothing():
            continue
        sql, params = build_query(f, reader)
        for record in await connection.fetch(sql, *params):
            seen.setdefault(record["id"], (record["raw"], record["id"], record["created_at"]))
    return sorted(seen.values(), key=lambda row: (-row[2], row[1]))
