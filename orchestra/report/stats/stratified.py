"""The suite's regression test: attempts permuted between the sides within each task.

Under "nothing changed" a task's attempts on the two sides are draws from one and the same
pass probability, so given how many of the task's attempts passed in all, which of them
landed on the candidate's side is pure chance: the candidate's passes X_i follow a
hypergeometric law (k_b + k_c attempts, s_i passes, k_c drawn), whatever the task's pass
probability and whatever k_b and k_c are. The statistic is the mean over tasks of
(candidate pass rate − baseline pass rate); given the s_i it is Σ a_i·X_i plus a constant,
with a_i = 1/k_c + 1/k_b, so its exact null law is the convolution of the tasks'
hypergeometrics on an integer lattice (a_i scaled by the lcm of the k's). The p-values are
exact and one-sided (docs/statistics.md, "The suite test"): the false-regression rate is at
most α for every design, including k_b = 1 against k_c = 5, where the old sign-flip test of the
differences, which assumes each difference symmetric under no change, was not.

Tasks whose attempts all passed or all failed carry no information (their X_i is fixed).
When the lattice would be too large (unusual mixes of attempt counts), a seeded Monte Carlo
of the same permutation law is used, with p = (1 + hits) / (1 + draws), still valid.

numpy and scipy are imported inside the functions (see orchestra.report.stats).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

#: The exact convolution runs while the lattice of the statistic has at most this many points.
EXACT_LATTICE_LIMIT = 200_000
MONTE_CARLO_DRAWS = 100_000
SEED = 31

PermutationMethod = Literal["exact", "monte-carlo", "none"]


@dataclass(frozen=True)
class TaskCounts:
    """One task's scored attempts and passes on each side (both sides scored it)."""

    baseline_n: int
    baseline_passes: int
    candidate_n: int
    candidate_passes: int

    def __post_init__(self) -> None:
        for side, n, passes in (
            ("baseline", self.baseline_n, self.baseline_passes),
            ("candidate", self.candidate_n, self.candidate_passes),
        ):
            if n < 1 or not 0 <= passes <= n:
                raise ValueError(f"{side}: passes must be within 0..n, n ≥ 1 (got {passes}/{n})")


@dataclass(frozen=True)
class SuiteTestResult:
    """Both one-sided p-values of the stratified permutation test."""

    p_regression: float  # P(a mean change this low or lower | no change)
    p_improvement: float  # P(this high or higher | no change)
    method: PermutationMethod
    informative_tasks: int  # tasks with both passes and failures among their attempts


def _lattice_weights(tasks: Sequence[TaskCounts]) -> list[int]:
    """a_i = L/k_c + L/k_b, L the lcm of every k, divided by their common divisor."""
    common = math.lcm(*(k for t in tasks for k in (t.baseline_n, t.candidate_n)))
    weights = [common // t.candidate_n + common // t.baseline_n for t in tasks]
    divisor = math.gcd(*weights)
    return [w // divisor for w in weights]


@functools.cache
def _hypergeometric_pmf(attempts: int, passes: int, drawn: int) -> tuple[float, ...]:
    """P(X = x) for x = 0..drawn: the passes among `drawn` of `attempts` attempts, `passes` of
    which passed (cached: the power simulation asks for the same few laws thousands of times)."""
    import numpy as np
    from scipy.stats import hypergeom

    pmf = np.atleast_1d(hypergeom.pmf(np.arange(drawn + 1), attempts, passes, drawn))
    return tuple(float(p) for p in pmf)


def _task_pmf(task: TaskCounts) -> tuple[float, ...]:
    passes = task.baseline_passes + task.candidate_passes
    return _hypergeometric_pmf(task.baseline_n + task.candidate_n, passes, task.candidate_n)


def _exact(
    tasks: Sequence[TaskCounts], weights: Sequence[int], observed: int
) -> tuple[float, float]:
    import numpy as np

    span = sum(w * t.candidate_n for w, t in zip(weights, tasks, strict=True))
    law = np.zeros(span + 1, dtype=np.float64)
    law[0] = 1.0
    reach = 0
    for weight, task in zip(weights, tasks, strict=True):
        pmf = _task_pmf(task)
        step = np.zeros_like(law)
        for x, probability in enumerate(pmf):
            if probability > 0:
                step[x * weight : x * weight + reach + 1] += probability * law[: reach + 1]
        law = step
        reach += weight * task.candidate_n
    lower = float(law[: observed + 1].sum())
    upper = float(law[observed:].sum())
    return min(1.0, lower), min(1.0, upper)


def _monte_carlo(
    tasks: Sequence[TaskCounts], weights: Sequence[int], observed: int
) -> tuple[float, float]:
    import numpy as np

    rng = np.random.default_rng(SEED)
    statistic = np.zeros(MONTE_CARLO_DRAWS, dtype=np.int64)
    for weight, task in zip(weights, tasks, strict=True):
        passes = task.baseline_passes + task.candidate_passes
        fails = task.baseline_n + task.candidate_n - passes
        draws = rng.hypergeometric(passes, fails, task.candidate_n, size=MONTE_CARLO_DRAWS)
        statistic += weight * draws
    lower = (1 + int((statistic <= observed).sum())) / (1 + MONTE_CARLO_DRAWS)
    upper = (1 + int((statistic >= observed).sum())) / (1 + MONTE_CARLO_DRAWS)
    return lower, upper


def suite_regression_test(tasks: Sequence[TaskCounts]) -> SuiteTestResult:
    """The exact one-sided p-values of "the candidate passes less (more) often" over `tasks`."""
    informative = [
        t
        for t in tasks
        if 0 < t.baseline_passes + t.candidate_passes < t.baseline_n + t.candidate_n
    ]
    if not informative:
        return SuiteTestResult(1.0, 1.0, "none", 0)
    weights = _lattice_weights(informative)
    observed = sum(w * t.candidate_passes for w, t in zip(weights, informative, strict=True))
    span = sum(w * t.candidate_n for w, t in zip(weights, informative, strict=True))
    if span <= EXACT_LATTICE_LIMIT:
        lower, upper = _exact(informative, weights, observed)
        method: PermutationMethod = "exact"
    else:
        lower, upper = _monte_carlo(informative, weights, observed)
        method = "monte-carlo"
    return SuiteTestResult(lower, upper, method, len(informative))
