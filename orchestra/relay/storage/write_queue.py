"""The writer's queue: jobs per source (a connection), taken in fair, cost-bounded batches.

Deficit round robin over the sources' estimated database work: each turn a source may spend
`quantum` units, so a source sending large events gets no more of the writer than one sending
small ones. A source whose queue was empty when its job arrived (a client sending now and
then) is served before the sources that keep their queues full (a client pipelining a flood).
Together with the cost bound of a batch this keeps an occasional writer's wait to about two
batches whatever the others send.
"""

import asyncio
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Job = TypeVar("Job")


class FairQueue(Generic[Job]):
    def __init__(self, quantum: int) -> None:
        self.quantum = quantum
        self._jobs: dict[Hashable, deque[Job]] = {}
        self._credit: dict[Hashable, int] = {}
        self._fresh: deque[Hashable] = deque()
        self._busy: deque[Hashable] = deque()
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return sum(len(jobs) for jobs in self._jobs.values())

    def holds(self, source: Hashable) -> bool:
        return source in self._jobs

    def put(self, source: Hashable, job: Job) -> None:
        jobs = self._jobs.get(source)
        if jobs is None:
            jobs = self._jobs[source] = deque()
            self._credit[source] = self.quantum
            self._fresh.append(source)
        jobs.append(job)
        self._ready.set()

    async def wait(self) -> None:
        """Return once a job is queued (or `wake` was called)."""
        await self._ready.wait()

    def wake(self) -> None:
        self._ready.set()

    def take(self, max_jobs: int, max_cost: int, cost: Callable[[Job], int]) -> list[Job]:
        """Up to `max_jobs` jobs whose costs add up to at most `max_cost` (at least one job
        when any is queued), each source's jobs in their order."""
        batch: list[Job] = []
        spent = 0
        while len(batch) < max_jobs and (self._fresh or self._busy):
            turns = self._fresh if self._fresh else self._busy
            source = turns[0]
            jobs = self._jobs[source]
            job_cost = cost(jobs[0])
            if turns is self._fresh and self._credit[source] >= job_cost:
                # A source that was idle gets its first job in now; the rest of its jobs (a
                # flood that just started) queue with the busy sources, so however many
                # sources turn fresh, each adds one job ahead of an occasional writer's.
                if batch and spent + job_cost > max_cost:
                    break
                batch.append(jobs.popleft())
                spent += job_cost
                self._credit[source] -= job_cost
                turns.popleft()
                if jobs:
                    self._busy.append(source)
                else:
                    del self._jobs[source], self._credit[source]
                continue
            if self._credit[source] < job_cost:
                # Its share of this round is spent: next turn, with one more quantum.
                turns.popleft()
                self._credit[source] += self.quantum
                self._busy.append(source)
                continue
            if batch and spent + job_cost > max_cost:
                break
            batch.append(jobs.popleft())
            spent += job_cost
            self._credit[source] -= job_cost
            if not jobs:
                turns.popleft()
                del self._jobs[source], self._credit[source]
        if not self._jobs:
            self._ready.clear()
        return batch
