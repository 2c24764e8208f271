"""What the relay stored in a time window, read straight from its database
(orchestrator.md §8.9 "What the relay stored").

The `events` table has no sequence; `received_at` is the storing transaction's start on the
database's own clock, so a window marked with that clock holds exactly the rows stored inside
it, whatever the hosts' clocks say.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import asyncpg

from orchestra.errors import OrchestraError

CONNECT_SECONDS = 10

_CLOCK = "SELECT clock_timestamp(), to_regclass('events') IS NOT NULL"
_STORED_SINCE = """
SELECT raw FROM events
WHERE received_at >= $1 AND received_at <= clock_timestamp()
ORDER BY received_at, id
"""


class StoreUnreadable(OrchestraError):
    """The relay's database cannot be read: the message says why, without credentials."""

    exit_code = 2


async def _fetch(database_url: str, query: str, *args: object) -> list[asyncpg.Record]:
    try:
        connection = await asyncpg.connect(database_url, timeout=CONNECT_SECONDS)
    except (OSError, asyncpg.PostgresError, TimeoutError) as error:
        raise StoreUnreadable(f"cannot connect to the relay's database: {error}") from None
    try:
        return list(await connection.fetch(query, *args))
    except asyncpg.PostgresError as error:
        raise StoreUnreadable(f"reading the relay's events failed: {error}") from None
    finally:
        await connection.close()


async def database_clock(database_url: str) -> datetime:
    """The database's current time: the start of a window (the `events` table must exist)."""
    moment, has_events = (await _fetch(database_url, _CLOCK))[0]
    if not has_events:
        raise StoreUnreadable("the database holds no relay `events` table")
    assert isinstance(moment, datetime)
    return moment


async def stored_since(database_url: str, start: datetime) -> list[dict[str, Any]]:
    """Every event stored from `start` until now, as signed, in the order the relay stored
    them (`received_at`, then `id` within one transaction). A row that a later version
    replaced or a deletion removed is gone: this is what the relay holds now."""
    rows = await _fetch(database_url, _STORED_SINCE, start)
    events: list[dict[str, Any]] = []
    for row in rows:
        event = json.loads(row["raw"])
        if isinstance(event, dict):
            events.append(event)
    return events
