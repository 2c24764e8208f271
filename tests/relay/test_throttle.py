"""The primitives behind the relay's limits: time slices and their round robin, token bucket,
budget, limit log, the writer's fair queue, the handshake pacer, the listener's error filter and the full-collection policy
(relay/throttle.py, storage/write_queue.py, admission.py, memory.py)."""

import asyncio
import errno
import logging

import pytest

from orchestra.relay.admission import HandshakePacer, LoopErrorFilter
from orchestra.relay.memory import FullCollections
from orchestra.relay.storage.write_queue import FairQueue
from orchestra.relay.throttle import Budget, LimitLog, TimeSlice, TokenBucket, Turns


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_refills_at_its_rate_up_to_its_burst():
    clock = Clock()
    bucket = TokenBucket(rate=2, burst=4, clock=clock)
    assert [bucket.take(1) for _ in range(4)] == [0.0] * 4
    assert bucket.take(1) == 0.5  # seconds until one token is back; nothing taken
    clock.now += 0.5
    assert bucket.take(1) == 0.0
    clock.now += 60
    assert bucket.is_full()
    assert bucket.take(10) == 0.0  # a full bucket pays for anything, then owes
    assert bucket.take(1) == 3.5


async def test_budget_waits_in_order_and_admits_an_oversized_request_alone():
    budget = Budget(10)
    await budget.acquire(8)
    order: list[str] = []

    async def take(name: str, amount: int) -> None:
        await budget.acquire(amount)
        order.append(name)

    first = asyncio.create_task(take("first", 5))
    second = asyncio.create_task(take("second", 1))  # fits, but waits behind "first"
    await asyncio.sleep(0)  # let both reach their wait
    assert order == [] and budget.would_wait(1)
    budget.release(8)
    await asyncio.gather(first, second)
    assert order == ["first", "second"] and budget.used == 6
    budget.release(6)
    await asyncio.wait_for(budget.acquire(50), 1)  # larger than the capacity, nothing held
    assert budget.used == 50


async def test_a_cancelled_budget_waiter_gives_its_turn_away():
    budget = Budget(1)
    await budget.acquire(1)
    stuck = asyncio.create_task(budget.acquire(1))
    after = asyncio.create_task(budget.acquire(1))
    await asyncio.sleep(0)
    stuck.cancel()
    budget.release(1)
    await asyncio.wait_for(after, 1)
    assert budget.used == 1


def test_limit_log_reports_once_a_minute(caplog):
    caplog.set_level(logging.WARNING, "buzz.relay.limits")
    clock = Clock()
    log = LimitLog("connection 127.0.0.1:5000", clock=clock)
    for _ in range(5):
        log.hit("event rate", "too fast")
    log.hit("max_subscriptions", "1024 subscriptions")
    clock.now += 61
    log.hit("event rate", "too fast")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "limit event rate reached by connection 127.0.0.1:5000: too fast",
        "limit max_subscriptions reached by connection 127.0.0.1:5000: 1024 subscriptions",
        "limit event rate reached by connection 127.0.0.1:5000: too fast"
        " (and 4 more times since the last report)",
    ]


class Passes:
    """Counts passes of the event loop: one `sleep(0)` per pass, as long as it runs."""

    def __init__(self) -> None:
        self.count = 0
        self._task = asyncio.create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0)
            self.count += 1

    def stop(self) -> None:
        self._task.cancel()


async def test_busy_tasks_take_turns_one_per_pass_of_the_loop():
    turns = Turns()
    passes = Passes()
    slices: list[tuple[str, int]] = []

    async def busy(name: str) -> None:
        turn = TimeSlice(turns, seconds=0)  # every slice is used up at once
        for _ in range(4):
            slices.append((name, passes.count))
            await turn.pause_if_due()

    await asyncio.gather(*(busy(name) for name in "abc"))
    passes.stop()
    assert [name for name, _ in slices] == list("abc") * 4  # round robin
    later = [at for _, at in slices[3:]]  # after their first slices, one per pass
    assert len(set(later)) == len(later)
    assert len(turns) == 0


async def test_a_task_woken_by_new_work_runs_before_the_backlog_queued_ahead():
    turns = Turns()
    served: list[str] = []
    arrived = asyncio.Event()

    async def busy(name: str) -> None:
        turn = TimeSlice(turns, seconds=0)
        while not served or served[-1] != "probe":
            served.append(name)
            await turn.pause_if_due()

    async def probe() -> None:
        turn = TimeSlice(turns, seconds=0)
        await turn.idle(arrived.wait())
        served.append("probe")

    waiting = asyncio.create_task(probe())
    backlog = [asyncio.create_task(busy(f"busy{n}")) for n in range(20)]
    await asyncio.sleep(0)  # one pass: every busy task uses its first slice
    assert len(turns) == 20  # and waits its turn
    arrived.set()
    await waiting
    await asyncio.gather(*backlog)
    # 20 slices were queued ahead of it; it ran within two passes, at most two of theirs.
    assert served.index("probe") <= 20 + 2


async def test_a_slice_starts_when_new_work_arrives_not_when_the_backlog_is_ready():
    clock = Clock()
    turns = Turns()
    turn = TimeSlice(turns, seconds=1.0, clock=clock)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    ready.set_result("queued already")
    clock.now += 5  # the task has been busy for 5 s
    assert await turn.idle(ready) == "queued already"  # no wait: the backlog continues
    pausing = asyncio.create_task(turn.pause_if_due())
    await asyncio.sleep(0)
    assert len(turns) == 1  # its slice is used up: it waits its turn
    await pausing
    later: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    idle = asyncio.create_task(turn.idle(later))
    await asyncio.sleep(0)
    clock.now += 5  # idle for 5 s, then new work arrives
    later.set_result("new work")
    assert await idle == "new work"
    await turn.pause_if_due()  # a fresh slice: it goes on at once
    assert len(turns) == 0


async def test_cancelling_an_idle_wait_or_a_turn_leaves_nothing_behind():
    turns = Turns()
    turn = TimeSlice(turns, seconds=0)
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    idle = asyncio.create_task(turn.idle(never))
    await asyncio.sleep(0)
    idle.cancel()
    with pytest.raises(asyncio.CancelledError):
        await idle
    assert never.cancelled()  # the cancellation reached what it waited for
    waiting = asyncio.create_task(turn.pause_if_due())
    after = asyncio.create_task(TimeSlice(turns, seconds=0).pause_if_due())
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.wait_for(after, 1)  # the cancelled waiter's turn went to the next


def test_fair_queue_serves_occasional_sources_first():
    queue: FairQueue[tuple[str, int]] = FairQueue(quantum=10)
    for n in range(10):
        queue.put("flood", (f"f{n}", 4))

    def cost(job: tuple[str, int]) -> int:
        return job[1]

    def names(batch: list[tuple[str, int]]) -> list[str]:
        return [name for name, _ in batch]

    assert names(queue.take(100, 12, cost)) == ["f0", "f1", "f2"]
    queue.put("probe", ("p0", 1))
    assert names(queue.take(100, 12, cost)) == ["p0", "f3", "f4"]


def test_fair_queue_shares_by_cost_not_by_count():
    queue: FairQueue[tuple[str, int]] = FairQueue(quantum=10)
    queue.put("big", ("b0", 25))  # more than one quantum: it waits for its share to build up
    for n in range(3):
        queue.put("small", (f"s{n}", 1))
    batch = queue.take(100, 30, lambda job: job[1])
    assert [name for name, _ in batch] == ["s0", "s1", "s2", "b0"]
    assert len(queue) == 0


def test_fair_queue_batches_are_bounded_by_cost_but_never_empty():
    queue: FairQueue[int] = FairQueue(quantum=500)
    for cost in (2500, 10, 10):
        queue.put("a", cost)
    assert queue.take(100, 2000, lambda cost: cost) == [2500]  # alone over the bound
    assert queue.take(100, 15, lambda cost: cost) == [10]
    assert queue.take(100, 15, lambda cost: cost) == [10]
    assert queue.take(100, 15, lambda cost: cost) == []


def test_running_out_of_descriptors_is_one_line_a_minute(caplog):
    caplog.set_level(logging.DEBUG)
    loop = asyncio.new_event_loop()
    try:
        handler = LoopErrorFilter()
        for _ in range(50):
            error = OSError(errno.EMFILE, "Too many open files")
            handler(loop, {"message": "socket.accept() out of system resource", "exception": error})
        handler(loop, {"message": "something else", "exception": ValueError("boom")})
    finally:
        loop.close()
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) == 2
    assert records[0].getMessage() == (
        "limit open files reached by the listener: socket.accept() out of system resource:"
        " [Errno 24] Too many open files"
    )
    assert records[0].exc_info is None
    assert records[1].getMessage() == "something else"  # other errors keep the default handling


def test_handshakes_beyond_a_burst_are_spread_out():
    clock = Clock()
    pacer = HandshakePacer(rate=10, burst=3, clock=clock)
    delays = [pacer.delay() for _ in range(6)]
    assert delays == pytest.approx([0, 0, 0, 0, 0.1, 0.2])
    clock.now += 60
    assert pacer.delay() == 0


def test_full_collections_only_while_cheap_and_spaced_by_their_cost():
    clock = Clock()
    collections = FullCollections(clock=clock)
    assert not collections.due(filters=200_000, connections=0, queued_write_bytes=0)
    assert not collections.due(filters=0, connections=1000, queued_write_bytes=0)
    assert collections.due(filters=100, connections=10, queued_write_bytes=0)
    ticks = iter([clock.now, clock.now + 0.5])  # a collection that took half a second
    collections._clock = lambda: next(ticks)
    collections.collect()
    collections._clock = clock
    clock.now += 0.5 + 60
    assert not collections.due(filters=100, connections=10, queued_write_bytes=0)
    clock.now += 100
    assert collections.due(filters=100, connections=10, queued_write_bytes=0)
