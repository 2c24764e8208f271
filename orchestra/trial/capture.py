"""The trial's capture: every event its identities may read, live, in the relay's order
(orchestrator.md §8.9 "Capture"), and, where the stack's database can be read, every event
the relay stored meanwhile (§8.9 "What the relay stored")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from orchestra.buzz import BuzzClient
from orchestra.stack.stored_events import StoreUnreadable, database_clock, stored_since
from orchestra.trial.live import LiveFeed

#: `relay_events_scope` (§8.1): what `relay_events` covers
Scope = Literal["database", "readable"]

#: everything the identity may read
EVERYTHING: list[dict[str, Any]] = [{}]


def channel_only(channel_id: str) -> list[dict[str, Any]]:
    """The channel's events and its relay-signed state (`d` = the channel id, §9.9)."""
    return [{"#h": [channel_id]}, {"#d": [channel_id]}]


class TrialCapture:
    """Subscriptions as the trial's identities, each with its own client; the union by id, in
    first-arrival order. Each connection delivers in the relay's acceptance order, so the
    first arrival orders events across connections."""

    def __init__(
        self, since: int, on_change: Callable[[], None], database_url: str | None = None
    ) -> None:
        """`database_url`: the relay's database (None for an external stack without one)."""
        self._since = since
        self._on_change = on_change
        self._database_url = database_url
        self._window_start: datetime | None = None
        self._events: dict[str, dict[str, Any]] = {}
        self._feeds: list[LiveFeed] = []
        self._stored: list[dict[str, Any]] = []
        self._store_failure: str | None = None

    async def open_window(self) -> str | None:
        """Before the first subscription: mark the start of the stored-events window on the
        database's clock. Returns why the window covers only what the trial's identities
        may read (no database, or one that cannot be read), None when it covers everything."""
        if self._database_url is None:
            return "the stack gives no database access"
        try:
            self._window_start = await database_clock(self._database_url)
        except StoreUnreadable as error:
            return str(error)
        return None

    @property
    def scope(self) -> Scope:
        """`database` when `stored` holds every event the relay stored in the window."""
        return "database" if self._window_start is not None else "readable"

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
        """Why the capture is incomplete: a subscription that ended for good, or the stored
        events that could not be read at the end of a `database` window."""
        lost = (feed.failure for feed in self._feeds if feed.failure is not None)
        return next(lost, self._store_failure)

    def events(self) -> list[dict[str, Any]]:
        """The captured events, in the relay's order."""
        return list(self._events.values())

    def stored(self) -> list[dict[str, Any]]:
        """Every event the relay's database held from the window's start to its end, in the
        order it stored them (empty for a `readable` scope)."""
        return list(self._stored)

    async def close(self) -> None:
        """End the subscriptions, then the stored-events window."""
        await asyncio.gather(*(feed.close() for feed in self._feeds))
        if self._database_url is not None and self._window_start is not None:
            try:
                self._stored = await stored_since(self._database_url, self._window_start)
            except StoreUnreadable as error:
                self._store_failure = f"the relay's stored events: {error}"
