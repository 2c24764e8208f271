"""The trial's capture: every event its identities may read, live, in the relay's order
(orchestrator.md §8.9 "Capture")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from orchestra.buzz import BuzzClient
from orchestra.trial.live import LiveFeed

#: everything the identity may read
EVERYTHING: list[dict[str, Any]] = [{}]


def channel_only(channel_id: str) -> list[dict[str, Any]]:
    """The channel's events and its relay-signed state (`d` = the channel id, §9.9)."""
    return [{"#h": [channel_id]}, {"#d": [channel_id]}]


class TrialCapture:
    """Subscriptions as the trial's identities, each with its own client; the union by id, in
    first-arrival order. Each connection delivers in the relay's acceptance order, so the
    first arrival orders events across connections."""

    def __init__(self, since: int, on_change: Callable[[], None]) -> None:
        self._since = since
        self._on_change = on_change
        self._events: dict[str, dict[str, Any]] = {}
        self._feeds: list[LiveFeed] = []

    def _store(self, event: dict[str, Any]) -> None:
        self._events.setdefault(event["id"], event)

    async def add(self, name: str, client: BuzzClient, criteria: list[dict[str, Any]]) -> None:
        """One more subscription, as `name`; returns once it has been acknowledged."""
        feed = LiveFeed(
            client, criteria, self._since, self._store, self._on_change,
            f"capture subscription as {name}",
        )  # fmt: skip
        self._feeds.append(feed)
        await feed.start()

    @property
    def failure(self) -> str | None:
        """Why the capture is incomplete: a subscription that ended for good."""
        return next((feed.failure for feed in self._feeds if feed.failure is not None), None)

    def events(self) -> list[dict[str, Any]]:
        """The captured events, in the relay's order."""
        return list(self._events.values())

    async def close(self) -> None:
        await asyncio.gather(*(feed.close() for feed in self._feeds))
