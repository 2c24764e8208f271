"""Live subscriptions and the fan-out stage (protocol.md §5.4, §15.4).

The writer hands every committed event (and connections every ephemeral one) to `Fanout`,
whose own task delivers them in commit order to the subscriptions the index names, after the
read check of §10. Delivery only appends to the subscriber's outbox, so a slow reader never
holds up the writer or the other readers.
"""

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestra.nostr import wire
from orchestra.nostr.event import Event
from orchestra.nostr.filters import Filter
from orchestra.relay.access import can_read, event_channel_id
from orchestra.relay.channels import ChannelCache
from orchestra.relay.index import Entry, SubscriptionIndex
from orchestra.relay.outbox import Outbox
from orchestra.relay.throttle import TimeSlice

log = logging.getLogger("buzz.relay.fanout")

MAX_QUEUED_EVENTS = 10_000


@dataclass(eq=False)
class Subscription:
    """One REQ of one connection. While `pending` is a list, live matches are held there (the
    stored results are still being sent) and counted against the connection's outbox."""

    subid: str
    filters: list[Filter]
    reader: str | None
    outbox: Outbox
    entries: list[Entry["Subscription"]] = field(default_factory=list)
    pending: list[tuple[str, str]] | None = field(default_factory=list)
    pending_bytes: int = 0
    frame_prefix: str = ""

    def __post_init__(self) -> None:
        self.frame_prefix = wire.relay_event_prefix(self.subid)

    def deliver(self, event: Event) -> None:
        if self.pending is None:
            self.outbox.put_event(self.frame_prefix, event.raw)
        elif self.outbox.hold(len(event.raw)):
            self.pending.append((event.id, event.raw))
            self.pending_bytes += len(event.raw)

    def take_pending(self) -> list[tuple[str, str]]:
        """End holding back: the held matches, oldest first; later ones are delivered."""
        pending, self.pending = self.pending or [], None
        self.outbox.unhold(self.pending_bytes)
        self.pending_bytes = 0
        return pending


class Fanout:
    def __init__(
        self, cache: ChannelCache, clock: Callable[[], int], lower_limit_seconds: int
    ) -> None:
        self._cache = cache
        self._clock = clock
        self.index: SubscriptionIndex[Subscription] = SubscriptionIndex(lower_limit_seconds)
        self._queue: asyncio.Queue[Event] = asyncio.Queue(MAX_QUEUED_EVENTS)

    def subscribe(self, sub: Subscription) -> None:
        now = self._clock()
        for f in sub.filters:
            if f.matches_nothing():
                continue
            entry = self.index.add(sub, f, now)
            if entry is not None:
                sub.entries.append(entry)

    def unsubscribe(self, sub: Subscription) -> None:
        for entry in sub.entries:
            self.index.remove(entry)
        sub.entries.clear()
        sub.take_pending()

    async def publish(self, event: Event) -> None:
        """Queue a committed (or ephemeral) event for delivery; waits while the queue is full."""
        await self._queue.put(event)

    async def run(self) -> None:
        # Delivery serves every connection in commit order, so it only yields between slices
        # rather than queue behind the connections' backlogs (throttle.Turns).
        turn = TimeSlice()
        while True:
            self.deliver(await turn.idle(self._queue.get()))
            await turn.pause_if_due()

    def deliver(self, event: Event) -> None:
        """Deliver to every matching subscription allowed to read the event."""
        self.index.advance(self._clock())
        channel_id = event_channel_id(event)
        done: set[Subscription] = set()
        for entry in self.index.candidates(event):
            sub = entry.owner
            if sub is None or sub in done or not entry.filter.matches(event):
                continue
            done.add(sub)
            try:
                if can_read(sub.reader, event, channel_id, self._cache):
                    sub.deliver(event)
            except Exception:  # one broken subscriber must not stop delivery to the others
                log.exception("delivery to subscription %r failed", sub.subid)
