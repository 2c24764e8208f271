"""Runs of the driver (`orchestra.run`) whose trials follow a script: the seam bench/scale.py
uses (`Execution(trial=...)`), so that a test decides how each trial ends and sees what the run
gave it, while the plan, the run directory, the stack, the runner and the resume are the real
ones (the session's relay as an external stack, the local environment)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from orchestra.config.task import Task
from orchestra.documents.enums import Accounting, ErrorType, Phase, TrialStatus, VerifierNetwork
from orchestra.documents.run_config import RunConfig, TrialSettings
from orchestra.documents.trial import RetriedAttempt, TrialResult, VerifierSummary
from orchestra.errors import TrialFailure
from orchestra.paths import PROJECT_ROOT
from orchestra.run.driver import Run
from orchestra.run.execution import Execution
from orchestra.run.outcome import RunOutcome
from orchestra.run.prepare import plan_benchmark, plan_resume
from orchestra.trial.accounting import TrialAccounting
from orchestra.trial.context import JobContext
from orchestra.trial.record import enter_phase, record_failure, write_result, write_trial_config
from orchestra.trial.state import TrialNaming, TrialState

USER_MENTION = PROJECT_ROOT / "tasks" / "buzz-native" / "user-mention"


class ScriptedError(TrialFailure):
    """The error a script makes a trial end in (its `exception_type` given per instance)."""

    def __init__(self, kind: ErrorType) -> None:
        super().__init__(f"scripted {kind}")
        self.exception_type = str(kind)


@dataclass
class ScriptedTrials:
    """A trial function (`orchestra.jobs.executor.TrialFunction`): each trial writes what a trial
    writes, through the trial's own recording code, and ends scored with reward 1.0 unless
    `errors` lists, for its attempt number, the error of each of its tries in turn. It counts
    the trials in flight and keeps the settings each trial was given."""

    errors: Mapping[int, Sequence[ErrorType]] = field(default_factory=dict)
    cost_usd: float | None = None
    ran: list[int] = field(default_factory=list)  # the attempt number of each trial started
    settings: list[TrialSettings] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0

    async def __call__(
        self,
        ctx: JobContext,
        task: Task,
        attempt: int,
        retried_from: Sequence[RetriedAttempt] = (),
        named: TrialNaming | None = None,
    ) -> TrialResult:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.ran.append(attempt)
        self.settings.append(ctx.options)
        state = TrialState.new(ctx, task, attempt, named)
        state.retried_from = list(retried_from)
        write_trial_config(state, ctx)
        try:
            for phase in Phase:
                enter_phase(state, phase)
                # back to the event loop, as every real phase goes: the dispatcher may start
                # the next slot now if the run allows it
                await asyncio.sleep(0)
            tries = self.errors.get(attempt, ())
            if len(retried_from) < len(tries):
                record_failure(state, ScriptedError(tries[len(retried_from)]))
                state.recorder.finish(TrialStatus.ERROR)
            else:
                state.grading.rewards, state.grading.reward = {"reward": 1.0}, 1.0
                state.grading.verifier = VerifierSummary(
                    exit_code=0,
                    timed_out=False,
                    network=VerifierNetwork.NOT_ISOLATED,
                    details_error=None,
                )
                state.recorder.finish(TrialStatus.SCORED)
            state.finalize.accounting = TrialAccounting(
                None, self.cost_usd, Accounting.EVENT_LOG, False
            )
            return write_result(state)
        finally:
            state.recorder.close()
            await state.trial_clients.close()
            self.in_flight -= 1


def base_config(tmp_path: Path, relay_url: str, **options: Any) -> RunConfig:
    """A run of one copy of user-mention on the session's relay; `options` by field name."""
    return RunConfig().updated(
        {
            "paths": [USER_MENTION],
            "stack": "external",
            "relay_url": relay_url,
            "env": "local",
            "jobs_dir": tmp_path / "jobs",
            "state_dir": tmp_path / "state",
            "run_name": "run",
            "check_endpoints": False,
            "quiet": True,
            **options,
        }
    )


def benchmark(config: RunConfig, trials: ScriptedTrials) -> RunOutcome:
    execution = Execution.of(config, trials)
    return Run(plan_benchmark(config, execution), execution, Console(quiet=True)).execute()


def resume(run_dir: Path, trials: ScriptedTrials, **given: Any) -> RunOutcome:
    """`orchestra resume RUN_DIR` with the options `given` (by field name)."""
    plan = plan_resume(run_dir, {"check_endpoints": False, **given})
    execution = Execution.of(plan.effective, trials)
    return Run(plan, execution, Console(quiet=True)).execute()
