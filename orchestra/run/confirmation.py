"""Confirmation reruns (docs/statistics.md "Confirmation reruns"): as a job's tasks finish, each
is held to its baseline (`--confirm-against` a run, job or report.json, or `--baseline-history`
the condition's recent runs in a results database). A task that may have regressed (one of its
first k attempts failed) or is under watch gets extra attempts, numbered after the job's k,
one at a time up to `confirm_attempts`, and no further once no outcome of the rest could make
it significant. The run's verdict is the one decision of
`orchestra.report.stats.confirm.decide` over the confirmed tasks, on their fresh attempts only.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from orchestra.config.condition import Condition
from orchestra.documents.enums import TrialStatus
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.tally import metric_passed
from orchestra.report.compare.comparison import load_side
from orchestra.report.stats.confirm import (
    NIGHTLY_ALPHA,
    NONE,
    Counts,
    Decision,
    Hypothesis,
    TaskEvidence,
    decide,
    futile,
)
from orchestra.results.history import PoolKey, read_history
from orchestra.results.schema import DatabaseError, open_database


@dataclass(frozen=True)
class Baseline:
    """Per task: its baseline counts; from a history, the recent runs' confirmation attempts
    and whether a recent first attempt failed; `lines` say what was pooled."""

    counts: dict[str, Counts]
    recent: dict[str, Counts] = field(default_factory=dict)
    recent_first_failed: frozenset[str] = frozenset()
    lines: tuple[str, ...] = ()


def baseline_of_run(path: Path) -> Baseline:
    """A run or job directory, or a report.json (`CompareInputError` naming the path)."""
    side = load_side(path)
    return Baseline(
        {name: Counts(task.successes, task.scored) for name, task in side.tasks.items()}
    )


def baseline_of_history(
    database: Path, condition: Condition, config: RunConfig, tasks: list[PlannedJob]
) -> Baseline:
    """The condition's recent runs that share this run's manifest, timeout multiplier and
    (per task) contract digest (`DatabaseError` with one line for a bad database)."""
    connection = open_database(database, create=False)
    try:
        key = PoolKey(condition.name, condition.manifest_sha256, config.trial.timeout_multiplier)
        digests = {task.name: task.contract_digest for job in tasks for task in job.tasks}
        history = read_history(
            connection, key, digests, source=str(database), runs=config.history_runs
        )
    except sqlite3.Error as error:
        raise DatabaseError(f"{database}: cannot read the history ({error})") from None
    finally:
        connection.close()
    return Baseline(
        {name: Counts(t.passes, t.scored) for name, t in history.tasks.items()},
        {name: Counts(t.recent_passes, t.recent_scored) for name, t in history.tasks.items()},
        frozenset(name for name, t in history.tasks.items() if t.recent_first_failed),
        tuple(history.lines()),
    )


@dataclass(frozen=True)
class TaskConfirmation:
    """A task of the decision's family: its evidence and what the family made of it."""

    task: str
    evidence: TaskEvidence
    regression: Hypothesis
    below_target: Hypothesis
    target: float
    tonight: Counts  # tonight's confirmation attempts (the rest of `evidence.fresh` is recent)
    fail_below_target: bool

    @property
    def confirmed(self) -> bool:
        """A regression, or (when asked) a miss of the reliability target: exit 3."""
        return self.regression.rejected or (self.fail_below_target and self.below_target.rejected)

    def line(self) -> str:
        """One line for the end of the run."""
        ran = f"passed {self.tonight.text()} confirmation attempts"
        if self.evidence.fresh != self.tonight:
            ran += f" ({self.evidence.fresh.text()} with the recent runs')"
        against = f"against the baseline's {self.evidence.baseline.text()}"
        test = f"p = {self.regression.p_value:.2g}, Holm-adjusted {self.regression.adjusted:.2g}"
        target = ""
        if self.below_target.rejected:
            target = (
                f"; below the reliability target {self.target:.0%} "
                f"(p = {self.below_target.p_value:.2g})"
            )
        if self.regression.rejected:
            return f"confirmed regression: {self.task} {ran} {against} ({test}){target}"
        return f"not confirmed: {self.task} {ran} {against} ({test}){target}"


class BaselineConfirmation:
    """`orchestra.jobs.runner.Confirmation` against a baseline (`Baseline`)."""

    def __init__(self, config: RunConfig, baseline: Baseline) -> None:
        self.baseline = baseline
        self.extra = config.confirm_attempts
        self.target = config.confirm_target
        self.fail_below_target = config.fail_below_target
        self.alpha = NIGHTLY_ALPHA

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
            evidence = self._evidence(planned, task.name, trials)
            if evidence is None or not evidence.wants_confirmation:
                continue
            last = max(r.attempt for r in trials)
            left = planned.attempts + self.extra - last
            target = self.target if self.fail_below_target else None
            if left > 0 and not futile(evidence, left, self.alpha, target):
                wanted.append((last + 1, task.name))
        return wanted

    def decision(self, jobs: list[tuple[PlannedJob, list[TrialResult]]]) -> Decision:
        """The one decision over every task of the run (no suite test: `orchestra compare`
        adds it to the same family)."""
        evidence = [
            found
            for planned, results in jobs
            for task in planned.tasks
            if (found := self._evidence(planned, task.name, _of(results, task.name))) is not None
        ]
        return decide(evidence, suite_p=None, alpha=self.alpha, target=self.target)

    def confirmations(
        self, jobs: list[tuple[PlannedJob, list[TrialResult]]]
    ) -> list[TaskConfirmation]:
        """A line's worth per task of the decision's family, in plan order."""
        decision = self.decision(jobs)
        below = {h.name: h for h in decision.below_target}
        found: list[TaskConfirmation] = []
        for hypothesis in decision.family:
            evidence = decision.evidence[hypothesis.name]
            tonight = evidence.fresh.passes - self._recent(hypothesis.name).passes
            scored = evidence.fresh.scored - self._recent(hypothesis.name).scored
            confirmation = TaskConfirmation(
                hypothesis.name, evidence, hypothesis, below[hypothesis.name],
                self.target, Counts(tonight, scored), self.fail_below_target,
            )  # fmt: skip
            found.append(confirmation)
        return found

    def _recent(self, task: str) -> Counts:
        return self.baseline.recent.get(task, NONE)

    def _evidence(
        self, planned: PlannedJob, task: str, trials: list[TrialResult]
    ) -> TaskEvidence | None:
        """None: no baseline for the task, or its k attempts are not all in yet."""
        baseline = self.baseline.counts.get(task)
        k = planned.attempts
        first = [r for r in trials if r.attempt <= k]
        if baseline is None or not baseline.scored or len(first) < k:
            return None
        extra = [r for r in trials if r.attempt > k]
        return TaskEvidence(
            task,
            baseline,
            _counts(first),
            _counts(extra) + self._recent(task),
            task in self.baseline.recent_first_failed,
        )


def _of(results: list[TrialResult], task: str) -> list[TrialResult]:
    return [r for r in results if r.task_name == task]


def _counts(trials: list[TrialResult]) -> Counts:
    scored = [r for r in trials if r.status is TrialStatus.SCORED]
    return Counts(sum(metric_passed(r.reward) for r in scored), len(scored))
