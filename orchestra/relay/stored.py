"""Stored results of a REQ (protocol.md §5.3 steps 3-4), streamed in pages.

One query returns the union's ids in order (with small events inline); the rest is read page
by page, and each page is queued only once the connection's earlier frames have drained to
the client, so a result of any byte size completes at the client's pace with bounded memory,
and never trips the slow-consumer limit meant for live traffic. Each page is one slice of the
event loop's round robin (throttle.Turns), so a large result never holds up other clients.
"""

from collections.abc import Callable

import asyncpg

from orchestra.nostr.filters import Filter
from orchestra.relay.outbox import Outbox
from orchestra.relay.storage.queries import Row, fetch_raw, query_events
from orchestra.relay.throttle import TimeSlice

PAGE_BYTES = 256 * 1024
# The next page is queued once fewer than this many bytes wait in the outbox.
REFILL_BELOW_BYTES = 512 * 1024


def pages(rows: list[Row]) -> list[list[Row]]:
    """Consecutive runs of rows of about PAGE_BYTES each (at least one row)."""
    result: list[list[Row]] = []
    page: list[Row] = []
    size = 0
    for row in rows:
        if page and size + row.size > PAGE_BYTES:
            result.append(page)
            page, size = [], 0
        page.append(row)
        size += row.size
    if page:
        result.append(page)
    return result


async def send_stored(
    pool: asyncpg.Pool,
    filters: list[Filter],
    reader: str | None,
    outbox: Outbox,
    frame_prefix: str,
    is_current: Callable[[], bool],
    turn: TimeSlice,
) -> set[str] | None:
    """Queue the stored results as EVENT frames, a page per `turn`; the ids sent, or None
    when the subscription was closed or replaced (or the connection closed) on the way."""
    rows = await query_events(pool, filters, reader)
    if not is_current() or outbox.closing:
        return None
    sent: set[str] = set()
    for page in pages(rows):
        await turn.pause_if_due()
        if not await outbox.wait_for_room(REFILL_BELOW_BYTES) or not is_current():
            return None
        missing = [row.id for row in page if row.raw is None]
        fetched = await fetch_raw(pool, missing) if missing else {}
        if not is_current() or outbox.closing:
            return None
        for row in page:
            raw = row.raw if row.raw is not None else fetched.get(row.id)
            if raw is not None:  # None: replaced by a newer version since the query
                outbox.put_event(frame_prefix, raw)
                sent.add(row.id)
    return sent
