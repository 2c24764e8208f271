"""Waiting for work unless a hurry event comes first (the second signal of orchestrator.md §7.6)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable


async def first_of(
    work: Awaitable[object], hurry: asyncio.Event | None, seconds: float | None
) -> bool:
    """Wait for `work` (up to `seconds` when given) or until `hurry` is set; True when `work`
    finished.

    `work` is left running when the wait ends early: pass `asyncio.shield(...)` to keep it.
    """
    work_done = asyncio.ensure_future(work)
    waiters: set[asyncio.Future[object]] = {work_done}
    hurried = asyncio.ensure_future(hurry.wait()) if hurry is not None else None
    if hurried is not None:
        waiters.add(hurried)
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if hurried is not None:
            hurried.cancel()
    return work_done.done()
