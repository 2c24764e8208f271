"""Confirmation reruns (issue 29 item 5): as a job's tasks finish, each is compared with the
baseline; a task that regressed (its planned attempts pass less often than the baseline's) gets
extra attempts, numbered after the job's k, one at a time up to `confirm_attempts`, until
`confirm_task` says no further attempt can change its verdict. The verdicts decide the run's
exit: a confirmed regression is exit 3, a flip that was noise is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestra.documents.enums import TrialStatus
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.tally import metric_passed
from orchestra.report.compare.comparison import load_side, successes_of
from orchestra.report.stats.confirm import (
    BELOW_CONTRACT,
    NOISE,
    REGRESSION,
    TaskVerdict,
    confirm_task,
)


@dataclass(frozen=True)
class TaskConfirmation:
    """A task that regressed against the baseline, and what its attempts made of it."""

    task: str
    verdict: TaskVerdict
    target: float
    confirmation_passes: int  # among the attempts beyond k
    confirmation_attempts: int

    @property
    def confirmed(self) -> bool:
        return self.verdict.final and self.verdict.verdict in (BELOW_CONTRACT, REGRESSION)

    def line(self) -> str:
        """One line for the end of the run."""
        v = self.verdict
        ran = f"{self.confirmation_passes} of {self.confirmation_attempts} confirmation attempts"
        if self.confirmed:
            if v.verdict == BELOW_CONTRACT:
                test = f"reliability target {self.target:.0%}, p = {v.p_target:.2g}"
            else:
                test = f"baseline, p = {v.p_baseline:.2g}"
            return f"confirmed regression: {self.task} ({v.verdict}; passed {ran}; {test})"
        if v.verdict == NOISE:
            return f"not confirmed: {self.task} passed {ran}"
        return f"unconfirmed: {self.task} passed {ran} (the verdict is still open)"


class BaselineConfirmation:
    """`orchestra.jobs.runner.Confirmation` against a baseline run, job or report.json."""

    def __init__(self, config: RunConfig, baseline: Path) -> None:
        side = load_side(baseline)  # `CompareInputError` naming the path
        self.baseline = {
            name: _rewards(successes_of(task), int(task["scored"]))
            for name, task in side.tasks.items()
        }
        self.extra = config.confirm_attempts
        self.target = config.confirm_target

    def slots(self, planned: PlannedJob) -> list[tuple[int, str]]:
        last = planned.attempts + self.extra
        return [
            (attempt, task.name)
            for attempt in range(planned.attempts + 1, last + 1)
            for task in planned.tasks
        ]

    def next_slots(self, planned: PlannedJob, finished: list[TrialResult]) -> list[tuple[int, str]]:
        wanted: list[tuple[int, str]] = []
        for task in planned.tasks:
            trials = [r for r in finished if r.task_name == task.name]
            verdict = self._verdict(planned, task.name, trials)
            if verdict is not None and not verdict.final:
                wanted.append((max(r.attempt for r in trials) + 1, task.name))
        return wanted

    def confirmations(
        self, planned: PlannedJob, results: list[TrialResult]
    ) -> list[TaskConfirmation]:
        """The verdict of every task of the job that regressed against the baseline."""
        found: list[TaskConfirmation] = []
        for task in planned.tasks:
            trials = [r for r in results if r.task_name == task.name]
            verdict = self._verdict(planned, task.name, trials)
            if verdict is None:
                continue
            extra = [r for r in trials if r.attempt > planned.attempts]
            passes = sum(metric_passed(r.reward) for r in extra if r.status is TrialStatus.SCORED)
            found.append(TaskConfirmation(task.name, verdict, self.target, passes, len(extra)))
        return found

    def _verdict(
        self, planned: PlannedJob, task: str, trials: list[TrialResult]
    ) -> TaskVerdict | None:
        """None: the task did not regress (or has no baseline, or its k attempts are not in)."""
        baseline = self.baseline.get(task)
        k = planned.attempts
        first = [r for r in trials if r.attempt <= k]
        if not baseline or len(first) < k:
            return None
        scored = [r.reward for r in first if r.status is TrialStatus.SCORED]
        if not scored or _rate(scored) >= _rate(baseline):
            return None
        rewards = [r.reward for r in trials if r.status is TrialStatus.SCORED]
        left = k + self.extra - max(r.attempt for r in trials)
        return confirm_task(
            baseline, rewards, max_attempts=len(rewards) + max(0, left), target=self.target
        )


def _rewards(passes: int, scored: int) -> list[float | None]:
    rewards: list[float | None] = [1.0] * passes
    return rewards + [0.0] * (scored - passes)


def _rate(rewards: list[float | None]) -> float:
    return sum(metric_passed(r) for r in rewards) / len(rewards)
