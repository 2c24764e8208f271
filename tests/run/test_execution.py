"""The executor a command runs its trials through gets the trial function of its `Execution`
(the seam bench/scale.py uses for its stub trial, scale-out.md §8); by default the real trial."""

from collections.abc import Sequence

from orchestra.config.task import Task
from orchestra.documents.trial import RetriedAttempt, TrialResult
from orchestra.jobs.executor import LocalExecutor
from orchestra.run.execution import Execution, start_executor
from orchestra.trial.context import JobContext
from orchestra.trial.run import run_trial
from orchestra.trial.state import TrialNaming


async def other_trial(
    ctx: JobContext,
    task: Task,
    attempt: int,
    retried_from: Sequence[RetriedAttempt] = (),
    named: TrialNaming | None = None,
) -> TrialResult:
    raise AssertionError("never run here")


def test_the_local_executor_runs_the_executions_trial_function() -> None:
    default = start_executor(Execution())
    assert isinstance(default, LocalExecutor) and default.trial is run_trial
    chosen = start_executor(Execution(trial=other_trial))
    assert isinstance(chosen, LocalExecutor) and chosen.trial is other_trial
