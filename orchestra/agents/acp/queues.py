"""Per-channel queues and batching (agent-harness.md §1.5).

A channel is ready when it has queued events, no turn in flight, and the batch window has
passed since its oldest queued event was queued.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from orchestra.agents.acp.prompt import sort_key


@dataclass(order=True)
class QueuedEvent:
    key: tuple[int, str]
    queued_at: float = field(compare=False)
    event: dict[str, Any] = field(compare=False)


class ChannelQueues:
    def __init__(self, *, max_queue: int, max_batch: int, window_s: float) -> None:
        self._max_queue = max_queue
        self._max_batch = max_batch
        self._window_s = window_s
        self._queues: dict[str, list[QueuedEvent]] = {}
        self.in_flight: set[str] = set()

    def add(self, channel: str, event: dict[str, Any], now: float) -> dict[str, Any] | None:
        """Queue an event; returns the event dropped to make room, if any."""
        queue = self._queues.setdefault(channel, [])
        bisect.insort(queue, QueuedEvent(sort_key(event), now, event))
        if len(queue) <= self._max_queue:
            return None
        oldest = min(range(len(queue)), key=lambda i: queue[i].queued_at)
        return queue.pop(oldest).event

    def depth(self, channel: str) -> int:
        return len(self._queues.get(channel, []))

    def drop_channel(self, channel: str) -> list[dict[str, Any]]:
        return [item.event for item in self._queues.pop(channel, [])]

    def _oldest_queued_at(self, channel: str) -> float:
        return min(item.queued_at for item in self._queues[channel])

    def next_ready(self, now: float) -> str | None:
        """The ready channel whose oldest queued event was queued first."""
        ready = [
            channel
            for channel, queue in self._queues.items()
            if queue
            and channel not in self.in_flight
            and now - self._oldest_queued_at(channel) >= self._window_s
        ]
        return min(ready, key=self._oldest_queued_at, default=None)

    def waiting(self) -> list[str]:
        """Channels with queued events and no turn in flight, oldest queued event first."""
        channels = [c for c, queue in self._queues.items() if queue and c not in self.in_flight]
        return sorted(channels, key=self._oldest_queued_at)

    def next_deadline(self) -> float | None:
        """When the next idle channel's batch window ends (monotonic time)."""
        deadlines = [
            self._oldest_queued_at(channel) + self._window_s
            for channel, queue in self._queues.items()
            if queue and channel not in self.in_flight
        ]
        return min(deadlines, default=None)

    def take_batch(self, channel: str) -> list[dict[str, Any]]:
        queue = self._queues.get(channel, [])
        batch, self._queues[channel] = queue[: self._max_batch], queue[self._max_batch :]
        return [item.event for item in batch]
