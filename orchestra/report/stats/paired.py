"""The suite-level paired comparison of `orchestra compare` and the leaderboard (docs/statistics.md).

Tasks scored on both sides are the pairs; each task's difference is candidate mean reward −
baseline mean reward. The suite's change is the mean difference over tasks, with a paired
bootstrap interval over tasks, tested by the exact one-sided permutation of attempts within
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

from orchestra.report.stats.inference import (
    Bounds,
    difference_interval,
    fisher_one_sided,
    holm,
    significant,
)
from orchestra.report.stats.power import Detectable, detectable_change
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
    detectable: Detectable
    #: per task, in the order given: the raw and Holm-adjusted lead p-values
    lead_p_values: list[float]
    lead_adjusted: list[float]


def _discordant(pairs: Sequence[TaskPair]) -> tuple[int, int] | None:
    if not pairs or not all(pair.binary_single for pair in pairs):
        return None
    baseline_only = sum(p.baseline_mean > p.candidate_mean for p in pairs)
    return baseline_only, sum(p.candidate_mean > p.baseline_mean for p in pairs)


def compare_suite(pairs: Sequence[TaskPair], alpha: float) -> SuiteComparison:
    differences = [pair.difference for pair in pairs]
    mean_difference = statistics.fmean(differences) if differences else 0.0
    result = suite_regression_test([pair.counts for pair in pairs])
    test = SUITE_TESTS[result.method]
    verdict = NO_CHANGE
    if significant(result.p_regression, alpha) and mean_difference < 0:
        verdict = REGRESSION
    elif significant(result.p_improvement, alpha) and mean_difference > 0:
        verdict = IMPROVEMENT
    means = [m for pair in pairs for m in (pair.baseline_mean, pair.candidate_mean)]
    pooled = statistics.fmean(means) if means else 0.5
    detectable = detectable_change(
        len(pairs),
        min((pair.baseline_n for pair in pairs), default=1),
        min((pair.candidate_n for pair in pairs), default=1),
        alpha,
        # Nothing observed varies (every task passed, or failed, on both sides): assume the
        # worst case rather than claim any change would show.
        pass_rate=pooled if 0 < pooled < 1 else 0.5,
        observed_sd=statistics.stdev(differences) if len(differences) > 1 else None,
    )
    leads = [pair.lead_p_value() for pair in pairs]
    return SuiteComparison(
        n_tasks=len(pairs),
        mean_difference=mean_difference,
        interval=difference_interval(differences),
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
