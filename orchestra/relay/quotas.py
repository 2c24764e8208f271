"""Per-pubkey write rates (protocol.md §13): events and event bytes per second, shared by all
connections authenticated as the pubkey."""

import math

from orchestra.relay.config import Limits
from orchestra.relay.throttle import TokenBucket


def _retry_hint(seconds: float) -> str:
    return f"retry in {max(1, math.ceil(seconds))} s"


class PubkeyQuota:
    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self.events = TokenBucket(limits.max_events_per_second, limits.events_burst)
        self.bytes = TokenBucket(limits.max_event_bytes_per_second, limits.event_bytes_burst)
        self.connections = 0

    def charge(self, frame_bytes: int) -> str | None:
        """Pay for one EVENT frame; the `rate-limited:` reply when the pubkey is over a rate."""
        wait = self.events.take(1)
        if wait:
            return (
                f"rate-limited: more than {self._limits.max_events_per_second} events per second"
                f" from this pubkey; {_retry_hint(wait)}"
            )
        wait = self.bytes.take(frame_bytes)
        if wait:
            self.events.give_back(1)
            return (
                f"rate-limited: more than {self._limits.max_event_bytes_per_second} bytes of"
                f" events per second from this pubkey; {_retry_hint(wait)}"
            )
        return None

    def is_idle(self) -> bool:
        return self.connections == 0 and self.events.is_full() and self.bytes.is_full()


class Quotas:
    """The quota of every pubkey with a connection, kept after its last connection closes
    until it has refilled (so reconnecting does not reset a rate)."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._by_pubkey: dict[str, PubkeyQuota] = {}

    def __len__(self) -> int:
        return len(self._by_pubkey)

    def attach(self, pubkey: str) -> PubkeyQuota:
        quota = self._by_pubkey.get(pubkey)
        if quota is None:
            quota = self._by_pubkey[pubkey] = PubkeyQuota(self._limits)
        quota.connections += 1
        return quota

    def detach(self, pubkey: str) -> None:
        quota = self._by_pubkey[pubkey]
        quota.connections -= 1
        if quota.is_idle():
            del self._by_pubkey[pubkey]

    def prune(self) -> None:
        for pubkey in [pk for pk, quota in self._by_pubkey.items() if quota.is_idle()]:
            del self._by_pubkey[pubkey]
