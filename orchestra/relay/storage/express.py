"""The writer's express lane: an occasional writer's cheap event is committed on the writer's
second database connection while the main lane is busy with a batch, so it waits for neither
the batch in progress nor a full batch of its own (docs/decisions.md D14).

Only sources with nothing queued or in progress in the main lane enter it, with one job each
at a time: a source's next job waits until its express job is done and then queues as usual,
so each source's jobs still commit in their order, and a flood (whose queue is never empty)
stays in the main lane. The main lane's exclusive batches (channel operations and TTL sweeps,
which change the state that other writes are checked against) run with the express lane
closed and idle, so every check sees the channel state of the commits before it.
"""

import asyncio
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

Job = TypeVar("Job")


class ExpressLane(Generic[Job]):
    def __init__(self, max_jobs: int) -> None:
        self.max_jobs = max_jobs
        self._jobs: list[Job] = []
        self._held: dict[Hashable, asyncio.Future[Any]] = {}  # source -> its job's future
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()  # no express batch in progress
        self._idle.set()
        self._open = asyncio.Event()  # the main lane runs no exclusive batch
        self._open.set()

    def __len__(self) -> int:
        return len(self._jobs)

    def holding(self, source: Hashable) -> asyncio.Future[Any] | None:
        """The future of `source`'s express job while that job is not done, else None."""
        future = self._held.get(source)
        if future is not None and future.done():
            del self._held[source]
            return None
        return future

    def has_room(self) -> bool:
        return len(self._jobs) < self.max_jobs

    def put(self, source: Hashable, job: Job, future: asyncio.Future[Any]) -> None:
        self._jobs.append(job)
        self._held[source] = future
        self._ready.set()

    async def next_batch(self, stopping: bool) -> list[Job]:
        """Every queued job, once the lane is open (waits for jobs unless `stopping`)."""
        if not stopping:
            await self._ready.wait()
        await self._open.wait()
        batch, self._jobs = self._jobs, []
        self._ready.clear()
        if batch:
            self._idle.clear()
        return batch

    def batch_done(self) -> None:
        self._idle.set()

    def wake(self) -> None:
        self._ready.set()

    async def close(self) -> None:
        """For an exclusive batch of the main lane: no new express batch, the one in progress
        finished."""
        self._open.clear()
        await self._idle.wait()

    def reopen(self) -> None:
        self._open.set()
