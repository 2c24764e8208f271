"""The comparison document `orchestra compare --format json` prints and its text and markdown
read: both sides, the suite's test, the one decision and every task's changes
(orchestrator.md §11.4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

from orchestra.documents.io import absent
from orchestra.documents.summary import Interval
from orchestra.documents.trial import Part
from orchestra.report.stats.confirm import Counts, Hypothesis
from orchestra.report.stats.paired import SuiteTest

#: A task's status (and a metric's change) in the comparison.
REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
MISSING = "missing"
UNSCORED = "unscored"
EXCLUDED = "excluded"


@dataclass
class MetricChange:
    """A metric's pass counts on each side: descriptive (the verdict is the suite's)."""

    metric: str
    baseline: tuple[int, int] | None  # (passed, scored)
    candidate: tuple[int, int] | None
    change: str  # regression, improvement, unchanged, metric-added, metric-removed
    p_value: float | None = None  # reward only: the task's lead p-value (raw)
    significant: bool = False  # reward only: a regression whose Holm-adjusted p ≤ α
    baseline_interval: tuple[float, float] | None = None
    candidate_interval: tuple[float, float] | None = None
    note: str = ""


@dataclass
class TaskComparison:
    task: str
    layer: str
    status: str  # regression, improvement, unchanged, unscored, missing, excluded, new
    note: str = ""
    metrics: list[MetricChange] = field(default_factory=list)
    baseline_mean: float | None = None  # mean reward over scored trials
    candidate_mean: float | None = None
    difference: float | None = None  # candidate − baseline
    p_value: float | None = None  # one-sided Fisher on the reward's pass counts (a lead)
    adjusted_p_value: float | None = None  # Holm over the tasks compared
    files_changed: bool = False  # the task's digest differs between the sides
    verifier_changed: bool = False  # graded by different verifiers (`tests/` digests)

    @property
    def significant(self) -> bool:
        return any(metric.significant for metric in self.metrics)

    @property
    def lost(self) -> bool:
        """The candidate has no scored trial of a task the baseline scored; a task the
        baseline did not score is excluded, never lost."""
        return self.status in (MISSING, UNSCORED)


class SideRecord(Part):
    label: str  # job names, or the report file
    condition: str


class BaselineRecord(SideRecord):
    pooled: list[str]  # a history's: what was pooled, one line each


class Discordant(Part):
    """McNemar's discordant tasks: passed on one side only."""

    baseline_only: int
    candidate_only: int


class PowerModel(Part):
    """The task difficulty the power simulation drew from (orchestra.report.stats.power)."""

    mean: float
    sd: float
    source: str


class SuiteRecord(Part):
    n_tasks: int
    mean_difference: float
    interval: Interval | None  # 95 % clustered interval over tasks
    test: SuiteTest
    p_value: float  # the smaller one-sided p
    p_regression: float
    p_improvement: float
    verdict: str
    discordant: Discordant | None  # one binary attempt a side
    detectable_change: float | None  # None: no fall is caught, or not simulated
    power_model: PowerModel | None  # None: not simulated (the leaderboard's pairs)
    power: str | None


class EvidenceRecord(Part):
    """A confirmed task's counts (`TaskEvidence`) and whether it looked regressed."""

    task: str
    baseline: Counts
    first: Counts
    fresh: Counts
    watched: bool
    screened: bool


class DecisionRecord(Part):
    """The one family (orchestra.report.stats.confirm.decide): the suite test and the tasks
    confirmed by their fresh attempts, and the reliability target apart."""

    alpha: float
    target: float
    family: list[Hypothesis]
    below_target: list[Hypothesis]
    evidence: dict[str, EvidenceRecord]
    confirmed_regressions: list[str]
    missed_target: list[str]


class ExcludedTask(Part):
    task: str
    status: str
    reason: str


class Lead(Part):
    task: str
    change: str
    difference: float | None
    p_value: float | None
    adjusted_p_value: float | None


class TargetEffect(Part):
    """`--target-effect`: the attempts per task (each side) the power model asks for."""

    effect: float
    attempts_per_task: int | None  # None: no number of attempts is enough
    text: str


class Comparison(Part):
    baseline: BaselineRecord
    candidate: SideRecord
    alpha: float
    verdict: str
    decision: DecisionRecord
    fail_below_target: bool
    suite: SuiteRecord
    regressed_tasks: list[str]
    significant_regressions: list[str]  # regressions whose adjusted p ≤ α: leads
    missing_tasks: list[str]
    improved_tasks: list[str]
    excluded_tasks: list[ExcludedTask]
    leads: list[Lead]
    changed_task_files: list[str]
    changed_verifiers: list[str]
    tasks: list[TaskComparison]
    target_effect: Annotated[TargetEffect | None, Field(exclude_if=absent)] = None
