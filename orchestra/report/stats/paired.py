"""The suite-level paired comparison of `orchestra compare` and the leaderboard (docs/statistics.md).

Tasks scored on both sides are the pairs; each task's difference is candidate mean reward −
baseline mean reward. The suite's change is the mean difference over tasks, with a paired
interval over tasks (orchestra.report.stats.clustered), tested by the exact one-sided permutation of attempts within
each task (orchestra.report.stats.stratified), valid whatever attempts each side ran: a regression
when the candidate passes significantly less often, an improvement (reported, never a
failure) when significantly more. With one binary attempt per task on each side the test is
the one-sided exact McNemar test. Per-task one-sided Fisher p-values, Holm-adjusted over the
tasks compared, are leads to look at, not verdicts.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from orchestra.report.stats.clustered import difference_bounds
from orchestra.report.stats.inference import (
    Bounds,
    fisher_one_sided,
    holm,
    significant,
)
from orchestra.report.stats.power import (
    ASSUMED,
    Detectable,
    Difficulty,
    detectable_change,
    observed_difficulty,
)
from orchestra.report.stats.stratified import PermutationMethod, TaskCounts, suite_regression_test

REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_CHANGE = "no significant change"
SuiteTest = Literal["permutation-exact", "permutation-monte-carlo", "none"]
SUITE_TESTS: dict[PermutationMethod, SuiteTest] = {
    "exact": "permutation-exact",
    "monte-carlo": "permutation-monte-carlo",
    "none": "none",
}


@dataclass(frozen=True)
class TaskPair:
    """One task scored on both sides: mean reward, scored trials and passes per side."""

    task: str
    baseline_mean: float
    baseline_n: int
    baseline_passes: int
    candidate_mean: float
    candidate_n: int
    candidate_passes: int

    @property
    def difference(self) -> float:
        return self.candidate_mean - self.baseline_mean

    @property
    def counts(self) -> TaskCounts:
        return TaskCounts(
            self.baseline_n, self.baseline_passes, self.candidate_n, self.candidate_passes
        )

    @property
    def binary_single(self) -> bool:
        """One attempt on each side, each a pass or a fail (McNemar's case)."""
        return (
            self.baseline_n == 1
            and self.candidate_n == 1
            and self.baseline_mean in (0.0, 1.0)
            and self.candidate_mean in (0.0, 1.0)
        )

    def lead_p_value(self) -> float:
        """One-sided Fisher p in the direction the pass counts moved (1 when they did not)."""
        b_rate = self.baseline_passes / self.baseline_n
        c_rate = self.candidate_passes / self.candidate_n
        if b_rate == c_rate:
            return 1.0
        counts = (self.candidate_passes, self.candidate_n, self.baseline_passes, self.baseline_n)
        return fisher_one_sided(*counts, "less" if c_rate < b_rate else "greater")


@dataclass(frozen=True)
class SuiteComparison:
    n_tasks: int
    mean_difference: float
    interval: Bounds | None
    test: SuiteTest
    p_value: float  # the one-sided p in the direction the suite moved (the smaller of the two)
    p_regression: float
    p_improvement: float
    verdict: str  # REGRESSION, IMPROVEMENT, NO_CHANGE
    #: one binary attempt per task on each side: tasks that passed on the baseline only, on
    #: the candidate only (the test is then the one-sided exact McNemar test)
    discordant: tuple[int, int] | None
    detectable: Detectable | None  # None: not asked for
    #: per task, in the order given: the raw and Holm-adjusted lead p-values
    lead_p_values: list[float]
    lead_adjusted: list[float]


def _discordant(pairs: Sequence[TaskPair]) -> tuple[int, int] | None:
    if not pairs or not all(pair.binary_single for pair in pairs):
        return None
    baseline_only = sum(p.baseline_mean > p.candidate_mean for p in pairs)
    return baseline_only, sum(p.candidate_mean > p.baseline_mean for p in pairs)


def difficulty_of(pairs: Sequence[TaskPair]) -> Difficulty:
    """The power model's task difficulty: both sides' attempts pooled per task."""
    if not pairs:
        return ASSUMED
    return observed_difficulty(
        [pair.baseline_passes + pair.candidate_passes for pair in pairs],
        [pair.baseline_n + pair.candidate_n for pair in pairs],
    )


def compare_suite(
    pairs: Sequence[TaskPair], alpha: float, *, with_power: bool = True
) -> SuiteComparison:
    """The suite's verdict over `pairs`; `with_power`: also the smallest fall it detects
    (a simulation: the leaderboard's many pairs leave it out)."""
    differences = [pair.difference for pair in pairs]
    mean_difference = statistics.fmean(differences) if differences else 0.0
    result = suite_regression_test([pair.counts for pair in pairs])
    test = SUITE_TESTS[result.method]
    verdict = NO_CHANGE
    if significant(result.p_regression, alpha) and mean_difference < 0:
        verdict = REGRESSION
    elif significant(result.p_improvement, alpha) and mean_difference > 0:
        verdict = IMPROVEMENT
    detectable = None
    if with_power:
        detectable = detectable_change(
            [pair.baseline_n for pair in pairs],
            [pair.candidate_n for pair in pairs],
            alpha,
            difficulty_of(pairs),
        )
    interval = difference_bounds(
        [(pair.baseline_mean, pair.baseline_n) for pair in pairs],
        [(pair.candidate_mean, pair.candidate_n) for pair in pairs],
    )
    leads = [pair.lead_p_value() for pair in pairs]
    return SuiteComparison(
        n_tasks=len(pairs),
        mean_difference=mean_difference,
        interval=None if interval is None else Bounds(*interval, "clustered"),
        test=test,
        p_value=min(result.p_regression, result.p_improvement),
        p_regression=result.p_regression,
        p_improvement=result.p_improvement,
        verdict=verdict,
        discordant=_discordant(pairs),
        detectable=detectable,
        lead_p_values=leads,
        lead_adjusted=holm(leads),
    )
