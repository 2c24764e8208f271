"""The trial's live channel subscription (orchestrator.md §7.11 "Channel observation")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestra.buzz import BuzzClient
from orchestra.nostr import tags
from orchestra.nostr.kinds import CHANNEL_MESSAGE_KINDS, Kind
from orchestra.trial.live import LiveFeed

#: The kinds `messages get` reads and the evidence keeps (§7.11, §8.2).
OBSERVED_KINDS = list(CHANNEL_MESSAGE_KINDS)


class ChannelObserver:
    """Stores every channel event by id with its first-seen arrival number.

    Opened right after the channel is created, before anything is posted, so every trial
    message reaches it live in the order the relay accepted it; a drop is survived as
    `LiveFeed` says.
    """

    def __init__(
        self, client: BuzzClient, channel_id: str, since: int, on_change: Callable[[], None]
    ) -> None:
        self.channel_id = channel_id
        self._on_change = on_change
        self.events: dict[str, dict[str, Any]] = {}
        self.arrival: dict[str, int] = {}
        self._feed = LiveFeed(
            client,
            [{"kinds": OBSERVED_KINDS, "#h": [channel_id]}],
            since,
            self.store,
            on_change,
            "channel subscription",
        )

    @property
    def failure(self) -> str | None:
        return self._feed.failure

    async def start(self) -> None:
        """Returns once the subscription has been acknowledged (EOSE)."""
        await self._feed.start()

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
        await self._feed.close()
