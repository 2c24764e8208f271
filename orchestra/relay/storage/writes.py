"""The writer: group commit of queued events (protocol.md §4 steps 8-11, §15.2).

Connections verify events and `submit` them; the main lane takes fair, cost-bounded batches
from its queue (write_queue.py), checks duplicates and channel rules in submission order,
commits plain events of a batch in one transaction, resolves each caller's future right after
the commit (so `OK true` always follows COMMIT) and hands the committed events to the fan-out
stage, which delivers them outside this task. Channel operations commit on their own, in
order, and update the cache after their commit. While the main lane is busy, an occasional
writer's cheap regular event is committed in the express lane (express.py) on the second
connection; channel operations and TTL sweeps run with that lane idle, so no per-channel
locks are needed. The queue is bounded by a memory budget: `submit` waits while it is full,
which stops the submitting connections from reading (backpressure).
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import asyncpg

from orchestra.nostr.event import Event, kind_class
from orchestra.nostr.keys import Keys
from orchestra.nostr.kinds import Kind
from orchestra.relay import channel_rules
from orchestra.relay.channel_rules import STATE_CHANGING_KINDS, ChannelPlan
from orchestra.relay.channels import Channel, ChannelCache, note_state_events
from orchestra.relay.fanout import Fanout
from orchestra.relay.outcome import (
    ACCEPTED,
    DUPLICATE,
    FAILED,
    NEWER_VERSION_EXISTS,
    Rejected,
    WriteResult,
)
from orchestra.relay.storage import DbConnection
from orchestra.relay.storage.channel_state import store_channel_state
from orchestra.relay.storage.express import ExpressLane
from orchestra.relay.storage.rows import LOOKUP_IDS, insert_events, is_indexed_tag, replace_event
from orchestra.relay.storage.write_queue import FairQueue
from orchestra.relay.throttle import Budget

log = logging.getLogger("buzz.relay.writer")

# A batch is bounded by its estimated database work, in units of about one indexed tag row
# (~10 µs on the 2-core VM): so an occasional writer waits for at most about two batches of
# ~20 ms each, however large the events queued ahead of it are (docs/performance.md).
MAX_BATCH_JOBS = 256
MAX_BATCH_COST = 2000
# Work a connection may have done per turn while others wait (deficit round robin).
WRITE_QUANTUM = 500
EVENT_COST = 5
CHANNEL_OPERATION_COST = 400
# The express lane (express.py): events up to this cost (a few indexed tags), this many a batch.
EXPRESS_MAX_COST = 100
EXPRESS_MAX_JOBS = 64
# Memory an event holds while queued, for the write budgets (its tags are separate objects).
MIN_WRITE_CHARGE = 1024
TAG_CHARGE = 128


def write_charge(event: Event) -> int:
    """Bytes an event is charged against the write budgets while it waits for the writer."""
    return max(MIN_WRITE_CHARGE, len(event.raw) + TAG_CHARGE * len(event.tags))


def write_cost(event: Event) -> int:
    """Estimated database work of an event, in the units of MAX_BATCH_COST."""
    cost = EVENT_COST + sum(1 for tag in event.tags if is_indexed_tag(tag))
    if event.kind in STATE_CHANGING_KINDS:
        cost += CHANNEL_OPERATION_COST
    return cost


@dataclass(eq=False)
class _Job:
    event: Event
    future: asyncio.Future[WriteResult]
    cost: int
    charge: int
    source: Hashable


@dataclass(eq=False)
class _Sweep:
    """A TTL sweep, queued like a write so it is ordered with them."""

    future: asyncio.Future[WriteResult]
    cost: int = CHANNEL_OPERATION_COST
    charge: int = 0
    source: Hashable = None


_SWEEPS = object()  # the queue source of TTL sweeps


@dataclass
class _Segment:
    """Plain (non state-changing) events committed together."""

    jobs: list[_Job] = field(default_factory=list)
    activity: dict[str, int] = field(default_factory=dict)  # channel -> newest kind-9 created_at


def _is_exclusive(job: "_Job | _Sweep") -> bool:
    """Whether committing `job` changes the channel state that other writes are checked
    against (so the express lane must be idle meanwhile)."""
    return isinstance(job, _Sweep) or job.event.kind in STATE_CHANGING_KINDS


def _resolve(job: "_Job | _Sweep", result: WriteResult) -> None:
    if not job.future.done():
        job.future.set_result(result)


class Writer:
    def __init__(
        self,
        pool: asyncpg.Pool,
        cache: ChannelCache,
        fanout: Fanout,
        relay_keys: Keys,
        clock: Callable[[], float] = time.time,
        max_queued_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self._pool = pool
        self._cache = cache
        self._fanout = fanout
        self._relay_keys = relay_keys
        self._clock = clock
        self._queue: FairQueue[_Job | _Sweep] = FairQueue(WRITE_QUANTUM)
        self._express: ExpressLane[_Job] = ExpressLane(EXPRESS_MAX_JOBS)
        self._in_progress: set[Hashable] | None = None  # the main lane's batch's sources
        self.budget = Budget(max_queued_bytes)
        self._stopping = False

    def _now(self) -> int:
        return int(self._clock())

    async def submit(
        self, source: object, event: Event, charge: int | None = None
    ) -> asyncio.Future[WriteResult]:
        """Queue `event` behind `source`'s earlier events; waits while the queue is full."""
        charge = write_charge(event) if charge is None else charge
        while (held := self._express.holding(source)) is not None:
            await asyncio.wait((held,))  # its express job first (one commit at most)
        await self.budget.acquire(charge)
        future: asyncio.Future[WriteResult] = asyncio.get_running_loop().create_future()
        job = _Job(event, future, write_cost(event), charge, source)
        if self._takes_express(job):
            self._express.put(source, job, future)
        else:
            self._queue.put(source, job)
        return future

    def _takes_express(self, job: _Job) -> bool:
        """A cheap regular event of a source with nothing in the main lane, while that lane is
        busy with a batch (else the next batch is as quick)."""
        busy = self._in_progress
        return (
            busy is not None
            and not self._stopping
            and job.cost <= EXPRESS_MAX_COST
            and kind_class(job.event.kind) == "regular"
            and not _is_exclusive(job)
            and job.source not in busy
            and not self._queue.holds(job.source)
            and self._express.has_room()
        )

    def sweep_ttl(self) -> asyncio.Future[WriteResult]:
        future: asyncio.Future[WriteResult] = asyncio.get_running_loop().create_future()
        self._queue.put(_SWEEPS, _Sweep(future))
        return future

    def stop(self) -> None:
        """Finish what is queued, then end `run`."""
        self._stopping = True
        self._queue.wake()
        self._express.wake()

    async def run(self) -> None:
        await asyncio.gather(self._run_main(), self._run_express())

    async def _run_express(self) -> None:
        while True:
            batch = await self._express.next_batch(self._stopping)
            if not batch:
                if self._stopping:
                    return
                continue
            try:
                await self._process(list(batch))
            except Exception:
                log.exception("express write batch of %d events failed", len(batch))
            finally:
                for job in batch:
                    _resolve(job, FAILED)
                    self.budget.release(job.charge)
                self._express.batch_done()

    async def _run_main(self) -> None:
        while True:
            # Once stopping, never wait: the batch that takes the last jobs also consumes the
            # wake-up `stop` gave, so waiting then would wait forever.
            if not self._stopping:
                await self._queue.wait()
            batch = self._queue.take(MAX_BATCH_JOBS, MAX_BATCH_COST, lambda job: job.cost)
            if not batch:
                if self._stopping:
                    return
                continue
            exclusive = any(_is_exclusive(job) for job in batch)
            if exclusive:
                await self._express.close()
            self._in_progress = {job.source for job in batch}
            try:
                await self._process(batch)
            except Exception:
                log.exception("write batch of %d events failed", len(batch))
            finally:
                self._in_progress = None
                for job in batch:
                    _resolve(job, FAILED)
                    self.budget.release(job.charge)
                if exclusive:
                    self._express.reopen()

    async def _process(self, batch: list[_Job | _Sweep]) -> None:
        async with self._pool.acquire() as connection:
            # One lookup serves the duplicate check and the thread references of the batch.
            events = [job.event for job in batch if isinstance(job, _Job)]
            ids = {event.id for event in events}
            refs = {ref for event in events for _, ref in channel_rules.thread_refs(event)}
            rows = await connection.fetch(LOOKUP_IDS, list(ids | refs))
            existing = {row["id"] for row in rows} & ids
            ref_channels: dict[str, str | None] = {row["id"]: row["h"] for row in rows}
            first_of: dict[str, _Job] = {}
            followers: list[tuple[_Job, _Job]] = []
            segment = _Segment()
            for job in batch:
                if isinstance(job, _Sweep):
                    await self._flush(connection, segment)
                    segment = _Segment()
                    await self._sweep(connection)
                    _resolve(job, ACCEPTED)
                    continue
                event = job.event
                if event.id in existing:
                    _resolve(job, DUPLICATE)
                    continue
                if event.id in first_of:
                    followers.append((job, first_of[event.id]))
                    continue
                first_of[event.id] = job
                try:
                    plan = self._check(event, ref_channels)
                except Rejected as rejected:
                    _resolve(job, WriteResult(False, rejected.message))
                    continue
                # Later events of this batch may reply to this one.
                ref_channels[event.id] = plan.channel_id if plan is not None else None
                if plan is not None and event.kind in STATE_CHANGING_KINDS:
                    await self._flush(connection, segment)
                    segment = _Segment()
                    await self._commit_channel_operation(connection, job, plan)
                    continue
                segment.jobs.append(job)
                if plan is not None and event.kind == Kind.MESSAGE:
                    previous = segment.activity.get(plan.channel_id, 0)
                    segment.activity[plan.channel_id] = max(previous, event.created_at)
            await self._flush(connection, segment)
        for job, first in followers:
            result = first.future.result() if first.future.done() else FAILED
            _resolve(job, DUPLICATE if result.accepted else result)

    def _check(self, event: Event, ref_channels: dict[str, str | None]) -> ChannelPlan | None:
        if not channel_rules.is_channel_scoped(event):
            return None
        plan = channel_rules.plan(event, self._cache, self._now())
        for _, ref in plan.thread_refs:
            if ref not in ref_channels:
                raise Rejected("invalid: thread reference not found")
            if ref_channels[ref] != plan.channel_id:
                raise Rejected("invalid: thread reference is in another channel")
        return plan

    async def _flush(self, connection: DbConnection, segment: _Segment) -> None:
        if not segment.jobs:
            return
        results: dict[_Job, WriteResult] = {}
        regular: list[_Job] = []
        replacing: list[_Job] = []
        for job in segment.jobs:
            is_regular = kind_class(job.event.kind) == "regular"
            (regular if is_regular else replacing).append(job)
        try:
            # Regular events alone need one atomic statement; replacements need a transaction.
            async with contextlib.AsyncExitStack() as stack:
                if replacing:
                    await stack.enter_async_context(connection.transaction())
                inserted = set()
                if regular:
                    inserted = await insert_events(
                        connection,
                        [job.event for job in regular],
                        segment.activity,
                    )
                for job in regular:
                    results[job] = ACCEPTED if job.event.id in inserted else DUPLICATE
                for job in replacing:
                    won = await replace_event(connection, job.event)
                    results[job] = ACCEPTED if won else WriteResult(False, NEWER_VERSION_EXISTS)
        except Exception:
            log.exception("committing %d events failed", len(segment.jobs))
            for job in segment.jobs:
                _resolve(job, FAILED)
            return
        for channel_id, at in segment.activity.items():
            channel = self._cache.get(channel_id)
            if channel is not None and at > channel.last_activity_at:
                self._cache.put(channel.replace(last_activity_at=at))
        for job in segment.jobs:
            _resolve(job, results[job])
        for job in segment.jobs:
            if results[job] is ACCEPTED:
                await self._fanout.publish(job.event)

    async def _commit_channel_operation(
        self, connection: DbConnection, job: _Job, plan: ChannelPlan
    ) -> None:
        event = job.event
        try:
            async with connection.transaction():
                await insert_events(connection, [event])
                state_events = await store_channel_state(
                    connection,
                    self._cache,
                    self._relay_keys,
                    plan.new_channel,
                    plan.state_kinds,
                    event.pubkey,
                    self._now(),
                )
        except Exception:
            log.exception("committing channel operation %s failed", event.id)
            _resolve(job, FAILED)
            return
        self._apply(plan.new_channel, state_events)
        _resolve(job, ACCEPTED)
        for committed in (event, *state_events):
            await self._fanout.publish(committed)

    def _apply(self, channel: Channel | None, state_events: list[Event]) -> None:
        if channel is not None:
            self._cache.put(channel)
        note_state_events(self._cache, state_events)

    async def _sweep(self, connection: DbConnection) -> None:
        """Archive every idle TTL channel (§9.10), one transaction per channel."""
        now = self._now()
        for channel in list(self._cache.channels.values()):
            archived = channel_rules.archive_for_ttl(channel, now)
            if archived is None:
                continue
            try:
                async with connection.transaction():
                    state_events = await store_channel_state(
                        connection,
                        self._cache,
                        self._relay_keys,
                        archived,
                        (Kind.CHANNEL_METADATA,),
                        channel.creator,
                        now,
                    )
            except Exception:
                log.exception("archiving channel %s by ttl failed", channel.channel_id)
                continue
            self._apply(archived, state_events)
            for state_event in state_events:
                await self._fanout.publish(state_event)
            log.info("channel %s archived by ttl", channel.channel_id)
