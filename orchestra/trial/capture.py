"""The trial's capture: every event its identities may read, live, in the relay's order
(orchestrator.md §8.9 "Capture")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from orchestra.buzz import BuzzClient
from orchestra.trial.live import LiveFeed


class TrialCapture:
    """One unfiltered subscription per identity (`readers`: its name -> its own client); the
    union by id, in first-arrival order. Each connection delivers in the relay's acceptance
    order, so the first arrival orders events across connections."""

    def __init__(
        self, readers: Mapping[str, BuzzClient], since: int, on_change: Callable[[], None]
    ) -> None:
        self._events: dict[str, dict[str, Any]] = {}
        self._feeds = [
            LiveFeed(client, {}, since, self._store, on_change, f"capture subscription as {name}")
            for name, client in readers.items()
        ]

    def _store(self, event: dict[str, Any]) -> None:
        self._events.setdefault(event["id"], event)

    async def start(self) -> None:
        """Returns once every subscription has been acknowledged."""
        try:
            await asyncio.gather(*(feed.start() for feed in self._feeds))
        except BaseException:
            await self.close()
            raise

    @property
    def failure(self) -> str | None:
        """Why the capture is incomplete: a subscription that ended for good."""
        return next((feed.failure for feed in self._feeds if feed.failure is not None), None)

    def events(self) -> list[dict[str, Any]]:
        """The captured events, in the relay's order."""
        return list(self._events.values())

    async def close(self) -> None:
        await asyncio.gather(*(feed.close() for feed in self._feeds))
