"""Complete, never silently cut reads through a relay that caps results per filter (buzz-cli.md §5.2)."""

from collections.abc import Awaitable, Callable
from typing import Any

from orchestra.buzz.errors import BuzzError

EventDict = dict[str, Any]
QueryOne = Callable[[dict[str, Any]], Awaitable[list[EventDict]]]


def sort_key(event: EventDict) -> tuple[int, str]:
    return (event["created_at"], event["id"])


async def read_pages(
    query: QueryOne,
    base_filter: dict[str, Any],
    *,
    max_limit: int,
    wanted: int | None,
    before: int | None = None,
) -> tuple[list[EventDict], bool]:
    """Return `(events oldest first, older_ones_exist)`: the newest `wanted` (all when None).

    `base_filter` may carry `since`; `before` is the strict upper bound of `--before`.
    The relay answers a filter with fewer events than its limit only when no more match, and the
    one second where a page ended is re-read on its own, so nothing is skipped at page seams.
    """
    if before is not None and before <= 0:
        return [], False
    since = base_filter.get("since", 0)
    until = before - 1 if before is not None else None
    collected: dict[str, EventDict] = {}
    while True:
        limit = max_limit if wanted is None else min(max_limit, wanted - len(collected) + 1)
        page_filter = {**base_filter, "limit": limit}
        if until is not None:
            page_filter["until"] = until
        page = await query(page_filter)
        collected.update((event["id"], event) for event in page)
        if len(page) < limit:
            break
        boundary = min(event["created_at"] for event in page)
        second = await query(
            {**base_filter, "since": boundary, "until": boundary, "limit": max_limit}
        )
        collected.update((event["id"], event) for event in second)
        if len(second) >= max_limit:
            raise BuzzError(
                "relay_error",
                f"cannot page completely: {max_limit} or more events share created_at {boundary}",
                retryable=False,
            )
        if wanted is not None and len(collected) > wanted:
            break
        if boundary - 1 < max(since, 0):
            break
        until = boundary - 1
    events = sorted(collected.values(), key=sort_key)
    if wanted is not None and len(events) > wanted:
        return events[-wanted:], True
    return events, False
