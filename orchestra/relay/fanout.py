"""Live subscriptions and fan-out (protocol.md §5.4, §15.4)."""

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestra.nostr.event import Event
from orchestra.nostr.filters import Filter
from orchestra.relay.access import can_read, event_channel_id
from orchestra.relay.channels import ChannelCache
from orchestra.relay.wire import dumps

log = logging.getLogger("buzz.relay.fanout")


def event_frame(subid: str, raw: str) -> str:
    return '["EVENT",' + dumps(subid) + "," + raw + "]"


@dataclass(eq=False)
class Subscription:
    """One REQ of one connection. While `pending` is a list, live matches are buffered there
    (the stored results are still being sent) instead of being delivered."""

    subid: str
    filters: list[Filter]
    reader: str | None
    send: Callable[[str], None]
    channel_keys: frozenset[str] = frozenset()
    pending: list[tuple[str, str]] | None = field(default_factory=list)
    frame_prefix: str = ""

    def __post_init__(self) -> None:
        self.frame_prefix = '["EVENT",' + dumps(self.subid) + ","

    def deliver(self, event: Event) -> None:
        if self.pending is not None:
            self.pending.append((event.id, event.raw))
        else:
            self.send(self.frame_prefix + event.raw + "]")


def channel_keys_of(filters: list[Filter]) -> frozenset[str]:
    """Channels to index a subscription under; empty when some filter has no `#h`."""
    keys: set[str] = set()
    for f in filters:
        values = f.tags.get("h")
        if values is None:
            return frozenset()
        keys.update(values)
    return frozenset(keys)


class SubscriptionIndex:
    def __init__(self, cache: ChannelCache) -> None:
        self._cache = cache
        self._by_channel: dict[str, set[Subscription]] = {}
        self._unscoped: set[Subscription] = set()

    def __len__(self) -> int:
        return len(self._unscoped) + sum(len(subs) for subs in self._by_channel.values())

    def add(self, sub: Subscription) -> None:
        sub.channel_keys = channel_keys_of(sub.filters)
        if not sub.channel_keys:
            self._unscoped.add(sub)
        for key in sub.channel_keys:
            self._by_channel.setdefault(key, set()).add(sub)

    def remove(self, sub: Subscription) -> None:
        self._unscoped.discard(sub)
        for key in sub.channel_keys:
            subs = self._by_channel.get(key)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._by_channel[key]

    def publish(self, event: Event) -> None:
        """Deliver a committed (or ephemeral) event to every matching subscription allowed to read it."""
        channel_id = event_channel_id(event)
        h_value = event.first_tag_value("h")
        # A subscription is either unscoped or indexed by channel, never both.
        scoped = self._by_channel.get(h_value, ()) if h_value is not None else ()
        for sub in itertools.chain(self._unscoped, scoped):
            try:
                if any(f.matches(event) for f in sub.filters) and can_read(
                    sub.reader, event, channel_id, self._cache
                ):
                    sub.deliver(event)
            except Exception:  # one broken subscriber must not stop delivery to the others
                log.exception("delivery to subscription %r failed", sub.subid)
