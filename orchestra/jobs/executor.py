"""Where a job's trials run: the seam the runner dispatches every trial through (scale-out.md §1).

The runner owns the plan, the slots, retries and the job's documents; an executor only runs
one trial when asked and returns its final result, with the trial's directory in place under
the job. `LocalExecutor` runs the trial function in this process (the default);
`orchestra.executors.ray` runs the same function on a Ray cluster's nodes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from orchestra.config.task import Task
from orchestra.documents.enums import ExecutorKind
from orchestra.documents.trial import RetriedAttempt, TrialResult
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.services import JobHooks, JobServices, job_context
from orchestra.trial.context import JobContext
from orchestra.trial.run import run_trial
from orchestra.trial.state import TrialNaming


class TrialFunction(Protocol):
    """`orchestra.trial.run.run_trial`'s shape: one trial, its final result. A Ray executor
    ships it to the nodes by reference, so it must be a module-level function."""

    def __call__(
        self,
        ctx: JobContext,
        task: Task,
        attempt: int,
        retried_from: Sequence[RetriedAttempt] = (),
        named: TrialNaming | None = None,
    ) -> Coroutine[Any, Any, TrialResult]: ...


class JobTrials(Protocol):
    """One job's trials as an executor runs them."""

    async def run(
        self, task: Task, attempt: int, retried_from: Sequence[RetriedAttempt]
    ) -> TrialResult:
        """Run one trial to its end (a cancellation of the caller cancels the trial, which
        still returns its `cancelled` result)."""
        ...


class Executor(Protocol):
    @property
    def kind(self) -> ExecutorKind:
        """What the job's `config.json` records (scale-out.md §7)."""
        ...

    def open_job(
        self, services: JobServices, planned: PlannedJob, hooks: JobHooks
    ) -> AbstractAsyncContextManager[JobTrials]:
        """What runs the job's trials, open for the whole job."""
        ...


@dataclass(frozen=True)
class LocalTrials:
    ctx: JobContext
    trial: TrialFunction

    async def run(
        self, task: Task, attempt: int, retried_from: Sequence[RetriedAttempt]
    ) -> TrialResult:
        return await self.trial(self.ctx, task, attempt, retried_from)


@dataclass(frozen=True)
class LocalExecutor:
    """Trials in this process, sharing the command's stack (orchestrator.md §7.5)."""

    trial: TrialFunction = run_trial
    kind: ExecutorKind = ExecutorKind.LOCAL

    @asynccontextmanager
    async def open_job(
        self, services: JobServices, planned: PlannedJob, hooks: JobHooks
    ) -> AsyncIterator[JobTrials]:
        async with job_context(services, planned, hooks) as ctx:
            yield LocalTrials(ctx, self.trial)
