"""Primitives behind the relay's limits (protocol.md §13): a token bucket for rates, an async
budget for backpressure, and a log that names each limit once per minute per owner."""

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger("buzz.relay.limits")

LIMIT_LOG_INTERVAL_SECONDS = 60.0
# How long one connection (or the writer, or fan-out) may keep the event loop before it lets
# the others run: frames already buffered are otherwise handled back to back.
TIME_SLICE_SECONDS = 0.001


class TimeSlice:
    """Cooperative fairness for loops over ready work: `await pause_if_due()` yields to the
    event loop once the current slice is used up, so no client's backlog stalls the others."""

    def __init__(self, seconds: float = TIME_SLICE_SECONDS) -> None:
        self._seconds = seconds
        self._started = time.monotonic()

    async def pause_if_due(self) -> None:
        if time.monotonic() - self._started >= self._seconds:
            await asyncio.sleep(0)
            self._started = time.monotonic()


class TokenBucket:
    """`rate` tokens per second, at most `burst` saved up. The bucket starts full."""

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = burst
        self._stamp = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    def take(self, amount: float) -> float:
        """Take `amount` tokens and return 0.0, or take nothing and return the seconds until
        they will be there. A full bucket always pays, so an amount above `burst` is possible."""
        self._refill()
        if self._tokens >= amount or self._tokens >= self.burst:
            self._tokens -= amount
            return 0.0
        return (amount - self._tokens) / self.rate

    def give_back(self, amount: float) -> None:
        self._tokens = min(self.burst, self._tokens + amount)

    def is_full(self) -> bool:
        self._refill()
        return self._tokens >= self.burst


class Budget:
    """`capacity` units shared by everyone who `acquire`s; waiters are served in arrival order.

    A request larger than the capacity is admitted when nothing else holds the budget, so a
    single oversized request cannot wait forever.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    def _fits(self, amount: int) -> bool:
        return self.used == 0 or self.used + amount <= self.capacity

    def would_wait(self, amount: int) -> bool:
        return bool(self._waiters) or not self._fits(amount)

    async def acquire(self, amount: int) -> None:
        if not self.would_wait(amount):
            self.used += amount
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (amount, future)
        self._waiters.append(entry)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(amount)  # granted just before the cancellation arrived
            else:
                self._waiters.remove(entry)
                self._grant()
            raise

    def release(self, amount: int) -> None:
        self.used -= amount
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self._fits(self._waiters[0][0]):
            amount, future = self._waiters.popleft()
            if future.done():
                continue
            self.used += amount
            future.set_result(None)


class LimitLog:
    """Logs a limit hit by `owner` (a connection, an address) at most once per minute per limit,
    so a client hammering a limit never turns into one log line per frame."""

    def __init__(self, owner: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.owner = owner
        self._clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def allows(self, key: str) -> bool:
        """True at most once per minute per `key`; the other calls are counted."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < LIMIT_LOG_INTERVAL_SECONDS:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return False
        self._last[key] = now
        return True

    def hit(self, limit: str, detail: str) -> None:
        if not self.allows(limit):
            return
        repeats = self._suppressed.pop(limit, 0)
        again = f" (and {repeats} more times since the last report)" if repeats else ""
        log.warning("limit %s reached by %s: %s%s", limit, self.owner, detail, again)
