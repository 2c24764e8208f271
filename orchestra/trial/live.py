"""One subscription kept open for a whole trial (orchestrator.md §7.11 "Channel observation",
§8.9): re-subscribed after a drop, stored events delivered in ascending (created_at, id) order."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from orchestra.buzz import EOSE, BuzzClient, BuzzError
from orchestra.stack.watch import StackUnavailable

RESUBSCRIBE_DEADLINE_SECONDS = 30.0
RESUBSCRIBE_BACKOFF_SECONDS = 1.0
#: seconds a re-subscription reaches back before the newest event seen (clock skew)
RESUBSCRIBE_OVERLAP_SECONDS = 5


class LiveFeed:
    """Hands every event `client` may read that matches one of `criteria` (filters without
    `since`) to `deliver`, live.

    After a drop it re-subscribes with `since` = newest seen created_at - 5; the stored events
    of a (re-)subscription, which the relay sends newest first, are delivered in ascending
    (created_at, id) order once their EOSE arrives. `deliver` sees an id again after a
    re-subscription: keeping the first copy is the caller's part. `on_end` runs when the feed
    stops for good (`failure` then says why, unless it was closed).
    """

    def __init__(
        self,
        client: BuzzClient,
        criteria: list[dict[str, Any]],
        since: int,
        deliver: Callable[[dict[str, Any]], None],
        on_end: Callable[[], None],
        name: str,
    ) -> None:
        """`name` begins its failure messages, e.g. `channel subscription`."""
        self._client = client
        self._criteria = criteria
        self._since = since
        self._deliver = deliver
        self._on_end = on_end
        self._name = name
        self._newest = 0
        self.failure: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        """Returns once the subscription has been acknowledged (EOSE)."""
        self._task = asyncio.create_task(self._run(), name=self._name)
        ready = asyncio.create_task(self._ready.wait())
        done, _ = await asyncio.wait(
            {self._task, ready},
            timeout=RESUBSCRIBE_DEADLINE_SECONDS,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if ready not in done:
            ready.cancel()
            await self.close()
            raise StackUnavailable(self.failure or f"{self._name} was not acknowledged")

    async def _run(self) -> None:
        lost_since: float | None = None
        try:
            while True:
                try:
                    await self._subscribe_once()
                    return
                except BuzzError as error:
                    if not error.retryable:
                        self.failure = f"{self._name} refused: {error.message}"
                        return
                    now = time.monotonic()
                    lost_since = lost_since if lost_since is not None else now
                    if now - lost_since >= RESUBSCRIBE_DEADLINE_SECONDS:
                        self.failure = (
                            f"{self._name} not re-established within "
                            f"{RESUBSCRIBE_DEADLINE_SECONDS:g} s: {error.message}"
                        )
                        return
                    self._since = max(self._since, self._newest - RESUBSCRIBE_OVERLAP_SECONDS)
                    await asyncio.sleep(RESUBSCRIBE_BACKOFF_SECONDS)
        finally:
            self._on_end()

    async def _subscribe_once(self) -> None:
        stored: list[dict[str, Any]] = []
        live = False
        filters = [{**criterion, "since": self._since} for criterion in self._criteria]
        async with self._client.subscribe(filters) as feed:
            async for item in feed:
                if item is EOSE:
                    live = True
                    for event in sorted(stored, key=lambda e: (e.get("created_at") or 0, e["id"])):
                        self._take(event)
                    stored.clear()
                    self._ready.set()
                elif isinstance(item, dict) and isinstance(item.get("id"), str):
                    if live:
                        self._take(item)
                    else:
                        stored.append(item)

    def _take(self, event: dict[str, Any]) -> None:
        created = event.get("created_at")
        if isinstance(created, int):
            self._newest = max(self._newest, created)
        self._deliver(event)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
