"""The trial's live channel subscription (orchestrator.md §7.11 "Channel observation")."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from orchestra.buzz import EOSE, BuzzClient, BuzzError
from orchestra.nostr import tags
from orchestra.nostr.kinds import CHANNEL_MESSAGE_KINDS, Kind
from orchestra.stack.watch import StackUnavailable

#: The kinds `messages get` reads and the evidence keeps (§7.11, §8.2).
OBSERVED_KINDS = list(CHANNEL_MESSAGE_KINDS)
RESUBSCRIBE_DEADLINE_SECONDS = 30.0
RESUBSCRIBE_BACKOFF_SECONDS = 1.0


class ChannelObserver:
    """Stores every channel event by id with its first-seen arrival number.

    Opened right after the channel is created, before anything is posted, so every trial
    message reaches it live in the order the relay accepted it. After a drop it re-subscribes
    with `since` = newest seen created_at - 5; stored events of a re-subscription (sent newest
    first) are numbered in ascending (created_at, id) order once their EOSE arrives.
    """

    def __init__(
        self, client: BuzzClient, channel_id: str, since: int, on_change: Callable[[], None]
    ) -> None:
        self._client = client
        self.channel_id = channel_id
        self._since = since
        self._on_change = on_change
        self.events: dict[str, dict[str, Any]] = {}
        self.arrival: dict[str, int] = {}
        self.failure: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        """Returns once the subscription has been acknowledged (EOSE)."""
        self._task = asyncio.create_task(self._run(), name=f"observe-{self.channel_id}")
        ready = asyncio.create_task(self._ready.wait())
        done, _ = await asyncio.wait(
            {self._task, ready},
            timeout=RESUBSCRIBE_DEADLINE_SECONDS,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if ready not in done:
            ready.cancel()
            await self.close()
            raise StackUnavailable(self.failure or "channel subscription was not acknowledged")

    def _filter(self) -> dict[str, Any]:
        return {"kinds": OBSERVED_KINDS, "#h": [self.channel_id], "since": self._since}

    async def _run(self) -> None:
        lost_since: float | None = None
        try:
            while True:
                try:
                    await self._subscribe_once()
                    return
                except BuzzError as error:
                    if not error.retryable:
                        self.failure = f"channel subscription refused: {error.message}"
                        return
                    now = time.monotonic()
                    lost_since = lost_since if lost_since is not None else now
                    if now - lost_since >= RESUBSCRIBE_DEADLINE_SECONDS:
                        self.failure = (
                            f"channel subscription not re-established within "
                            f"{RESUBSCRIBE_DEADLINE_SECONDS:g} s: {error.message}"
                        )
                        return
                    newest = max(
                        (e.get("created_at") or 0 for e in self.events.values()), default=0
                    )
                    self._since = max(self._since, newest - 5)
                    await asyncio.sleep(RESUBSCRIBE_BACKOFF_SECONDS)
        finally:
            self._on_change()

    async def _subscribe_once(self) -> None:
        stored: list[dict[str, Any]] = []
        live = False
        async with self._client.subscribe([self._filter()]) as subscription:
            async for item in subscription:
                if item is EOSE:
                    live = True
                    for event in sorted(stored, key=lambda e: (e.get("created_at") or 0, e["id"])):
                        self.store(event)
                    stored.clear()
                    self._ready.set()
                elif isinstance(item, dict) and isinstance(item.get("id"), str):
                    if live:
                        self.store(item)
                    else:
                        stored.append(item)

    def store(self, event: dict[str, Any]) -> None:
        """Keep an event the subscription delivered (the first copy of each id counts)."""
        event_id = event["id"]
        if event_id not in self.events:
            self.events[event_id] = event
            self.arrival[event_id] = len(self.arrival) + 1
            self._on_change()

    def authored_by(self, pubkey: str) -> list[dict[str, Any]]:
        """Events of `pubkey` in arrival order."""
        return sorted(
            (e for e in self.events.values() if e.get("pubkey") == pubkey),
            key=lambda e: self.arrival[e["id"]],
        )

    def wake_eligible(self, pubkey: str) -> list[str]:
        """Ids, in arrival order, of the events that can wake the agent `pubkey` (§7.11):
        kind 9 in this channel, `p`-tagging it, authored by another identity."""
        return [
            event["id"]
            for event in self.events.values()  # insertion order is arrival order
            if event.get("kind") == Kind.MESSAGE
            and event.get("pubkey") != pubkey
            and tags.channel_id(tags.of_event(event)) == self.channel_id
            and pubkey in tags.mentions(tags.of_event(event))
        ]

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
