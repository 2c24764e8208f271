"""Primitives behind the relay's limits (protocol.md §13): time slices and the relay-wide round
robin of busy tasks (the event loop's fair share), a token bucket for rates, an async budget
for backpressure, and a log that names each limit once per minute per owner."""

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar, cast

log = logging.getLogger("buzz.relay.limits")

LIMIT_LOG_INTERVAL_SECONDS = 60.0
# How long a task may keep the event loop before it lets the others run: frames already
# buffered are otherwise handled back to back.
TIME_SLICE_SECONDS = 0.001

T = TypeVar("T")


class Turns:
    """The relay-wide round robin of tasks that have more work queued than one slice (a
    backlog): each pass of the event loop gives one of them its next slice.

    A task that wakes up to new work (a frame that just arrived, a reply to send) runs at
    once, as usual; only a task that would run on past its slice waits here. So however many
    connections keep work queued, one pass of the loop holds at most one slice of theirs, and
    what anyone else waits for (a probe's EVENT, its OK) is a few passes away, not one slice
    per busy task."""

    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._granting = False

    def __len__(self) -> int:
        return len(self._waiting)

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[None] = loop.create_future()
        self._waiting.append(turn)
        if not self._granting:
            self._granting = True
            loop.call_soon(self._grant)
        await turn  # a cancelled waiter's future is cancelled too; `_grant` skips it

    def _grant(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                break
        if self._waiting:
            asyncio.get_running_loop().call_soon(self._grant)  # the next one, next pass
        else:
            self._granting = False


class _Watched(Generic[T]):
    """Awaits `awaitable`, noting whether the task had to wait for it (was suspended)."""

    def __init__(self, awaitable: Awaitable[T]) -> None:
        self._awaitable = awaitable
        self.suspended = False

    def __await__(self) -> Generator[Any, Any, T]:
        inner = self._awaitable.__await__()
        value: Any = None
        error: BaseException | None = None
        signal: Any = None
        while True:
            try:
                signal = inner.send(value) if error is None else inner.throw(error)
            except StopIteration as done:
                return cast(T, done.value)
            finally:
                # Nothing that an exception passing through may refer to (the future it was
                # set on, the exception itself) stays referenced by this frame, which the
                # exception's traceback holds: that would be a reference cycle.
                value, error = None, None
            self.suspended = True
            try:
                value = yield signal
            except GeneratorExit:
                inner.close()
                raise
            except BaseException as thrown:  # e.g. the task's cancellation: pass it on
                error = thrown
            finally:
                signal = None


class TimeSlice:
    """Cooperative fairness for a task's loop over ready work: `await pause_if_due()` lets the
    others run once the current slice is used up: through `turns` (the relay-wide round robin)
    when given, else by yielding once. A slice starts when the task wakes up from waiting for
    new work (`idle`), so waiting for its own backlog (a full socket, the writer, a query)
    counts as part of the slice, and a task that is never idle takes its turns."""

    def __init__(
        self,
        turns: Turns | None = None,
        seconds: float = TIME_SLICE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._turns = turns
        self._seconds = seconds
        self._clock = clock
        self._started = clock()

    async def idle(self, awaitable: Awaitable[T]) -> T:
        """Await new work; if it was not there yet, the next slice starts when it arrives."""
        watched = _Watched(awaitable)
        result = await watched
        if watched.suspended:
            self._started = self._clock()
        return result

    async def pause_if_due(self) -> None:
        if self._clock() - self._started >= self._seconds:
            if self._turns is None:
                await asyncio.sleep(0)
            else:
                await self._turns.wait()
            self._started = self._clock()


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
