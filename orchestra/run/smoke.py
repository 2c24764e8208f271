"""The smoke gate (`--smoke`, orchestrator.md §2.2): before the plan, one trial of the plan's
first task with the whole roster, in `<run>/smoke/`, never counted in the run's rates. The
plan starts only when every seat acted (called a tool and posted); the trial's cost and time,
times the planned trials, say what the plan will cost and how long it will take."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, replace
from typing import Protocol

from orchestra.documents.enums import Flag, TrialStatus
from orchestra.documents.trial import TrialResult
from orchestra.errors import OrchestraError
from orchestra.jobs.executor import Executor
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.runner import JobOutcome
from orchestra.jobs.services import JobServices
from orchestra.jobs.tally import seconds_between
from orchestra.plural import plural
from orchestra.run.scope import RunScope

#: The smoke job's name: its directory beside the run's jobs.
SMOKE_JOB = "smoke"


class SmokeFailed(OrchestraError):
    """The smoke trial failed or a seat never acted: the plan is not started (exit 2)."""

    exit_code = 2


def smoke_job(first: PlannedJob, name: str = SMOKE_JOB) -> PlannedJob:
    """One attempt of the first job's first task."""
    return PlannedJob(name, first.layer, 1, first.tasks[:1])


class JobRunner(Protocol):
    """`run_job` with the run's share, progress and interrupt bound."""

    def __call__(
        self, planned: PlannedJob, services: JobServices, executor: Executor | None = None
    ) -> Awaitable[JobOutcome]: ...


async def smoke_gate(
    scope: RunScope,
    services: JobServices,
    run_job: JobRunner,
    executor: Executor,
    n_concurrent: int,
) -> str:
    """Run the smoke trial (a run's in `<run>/smoke/`, a lone job's beside it as
    `<job>.smoke/`); its extrapolation line, or `SmokeFailed`."""
    if scope.run is not None:
        smoke = smoke_job(scope.jobs[0])
        services = replace(services, jobs_dir=scope.path)
    else:
        smoke = smoke_job(scope.jobs[0], f"{scope.jobs[0].name}.{SMOKE_JOB}")
    outcome = await run_job(smoke, services, executor=executor)
    finished = outcome.results[:1] if not outcome.interrupted else []
    verdict = SmokeVerdict(finished[0] if finished else None)
    problem = verdict.problem()
    if problem is not None:
        raise SmokeFailed(problem)
    return verdict.extrapolation(scope.n_planned, n_concurrent)


def idle_seats(result: TrialResult) -> list[str]:
    """The seats that did not act: never called a tool, or posted nothing."""
    return [
        seat.agent_id
        for seat in result.buzz.agents
        if Flag.NO_TOOL_CALL in seat.flags or not seat.messages
    ]


@dataclass(frozen=True)
class SmokeVerdict:
    result: TrialResult | None  # None: the trial did not finish (interrupted)

    def problem(self) -> str | None:
        """Why the plan must not start; None when every seat acted."""
        result = self.result
        if result is None:
            return "smoke trial did not finish; no planned trial was started"
        if result.status is not TrialStatus.SCORED:
            kind = result.error_type or result.status
            return f"smoke trial {result.trial_name} ended {kind}; no planned trial was started"
        idle = idle_seats(result)
        if idle:
            return (
                f"smoke trial {result.trial_name}: {', '.join(idle)} never acted (called a tool "
                "and posted); no planned trial was started"
            )
        return None

    def extrapolation(self, n_planned: int, n_concurrent: int) -> str:
        """`smoke passed: …; the plan's N trials: about $X and Y min at C at a time`."""
        result = self.result
        assert result is not None and result.finished_at is not None
        seconds = seconds_between(result.started_at, result.finished_at)
        cost = result.cost_usd
        cost_text = "cost unknown" if cost is None else f"about ${cost * n_planned:.4f}"
        waves = -(-n_planned // max(1, n_concurrent))
        return (
            f"smoke passed ({result.trial_name}: every seat acted, {seconds:.0f} s"
            f"{'' if cost is None else f', ${cost:.4f}'}); the plan's "
            f"{plural(n_planned, 'trial')}: {cost_text} and about {seconds * waves / 60:.1f} min "
            f"at {n_concurrent} at a time"
        )
