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
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

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


def _lattice_weights(baseline_n: Sequence[int], candidate_n: Sequence[int]) -> list[int]:
    """a_i = L/k_c + L/k_b, L the lcm of every k, divided by their common divisor."""
    common = math.lcm(*baseline_n, *candidate_n)
    weights = [common // kc + common // kb for kb, kc in zip(baseline_n, candidate_n, strict=True)]
    divisor = math.gcd(*weights)
    return [w // divisor for w in weights]


@functools.cache
def _hypergeometric_table(baseline_n: int, candidate_n: int) -> npt.NDArray[np.float64]:
    """Row s: P(X = x), x = 0..k_c, the candidate's passes when s passes of the task's
    k_b + k_c attempts are dealt out (cached: the power simulation asks for few designs)."""
    import numpy as np
    from scipy.stats import hypergeom

    attempts = baseline_n + candidate_n
    passes = np.arange(attempts + 1)[:, None]
    drawn = np.arange(candidate_n + 1)[None, :]
    table = np.asarray(hypergeom.pmf(drawn, attempts, passes, candidate_n), dtype=np.float64)
    table.setflags(write=False)
    return table


def regression_p_values(
    baseline_n: Sequence[int],
    candidate_n: Sequence[int],
    baseline_passes: npt.NDArray[np.int64],
    candidate_passes: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], PermutationMethod]:
    """The one-sided p-values (regression, improvement) of many suites of one design at once:
    row r of the pass arrays (suites × tasks) is one suite whose task i ran `baseline_n[i]`
    and `candidate_n[i]` attempts. The power simulation and the calibration study run the
    suites of a design through this; `suite_regression_test` runs one."""
    import numpy as np

    weights = _lattice_weights(baseline_n, candidate_n)
    observed = candidate_passes @ np.array(weights, dtype=np.int64)
    totals = baseline_passes + candidate_passes
    span = sum(w * kc for w, kc in zip(weights, candidate_n, strict=True))
    if span > EXACT_LATTICE_LIMIT:
        return (*_monte_carlo(baseline_n, candidate_n, weights, totals, observed), "monte-carlo")
    suites = len(observed)
    law = np.zeros((suites, span + 1), dtype=np.float64)
    law[:, 0] = 1.0
    reach = 0
    for task, (weight, kb, kc) in enumerate(zip(weights, baseline_n, candidate_n, strict=True)):
        pmf = _hypergeometric_table(kb, kc)[totals[:, task]]
        step = np.zeros_like(law)
        for x in range(kc + 1):
            step[:, x * weight : x * weight + reach + 1] += pmf[:, x, None] * law[:, : reach + 1]
        law = step
        reach += weight * kc
    below = np.cumsum(law, axis=1)
    rows = np.arange(suites)
    lower = below[rows, observed]
    upper = 1.0 - np.where(observed > 0, below[rows, np.maximum(observed - 1, 0)], 0.0)
    return np.minimum(lower, 1.0), np.clip(upper, 0.0, 1.0), "exact"


def _monte_carlo(
    baseline_n: Sequence[int],
    candidate_n: Sequence[int],
    weights: Sequence[int],
    totals: npt.NDArray[np.int64],
    observed: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    import numpy as np

    rng = np.random.default_rng(SEED)
    lower = np.empty(len(observed))
    upper = np.empty(len(observed))
    for row, (passes, seen) in enumerate(zip(totals, observed, strict=True)):
        statistic = np.zeros(MONTE_CARLO_DRAWS, dtype=np.int64)
        for weight, kb, kc, good in zip(weights, baseline_n, candidate_n, passes, strict=True):
            draws = rng.hypergeometric(good, kb + kc - good, kc, size=MONTE_CARLO_DRAWS)
            statistic += weight * draws
        lower[row] = (1 + int((statistic <= seen).sum())) / (1 + MONTE_CARLO_DRAWS)
        upper[row] = (1 + int((statistic >= seen).sum())) / (1 + MONTE_CARLO_DRAWS)
    return lower, upper


def suite_regression_test(tasks: Sequence[TaskCounts]) -> SuiteTestResult:
    """The exact one-sided p-values of "the candidate passes less (more) often" over `tasks`."""
    import numpy as np

    informative = [
        t
        for t in tasks
        if 0 < t.baseline_passes + t.candidate_passes < t.baseline_n + t.candidate_n
    ]
    if not informative:
        return SuiteTestResult(1.0, 1.0, "none", 0)
    lower, upper, method = regression_p_values(
        [t.baseline_n for t in informative],
        [t.candidate_n for t in informative],
        np.array([[t.baseline_passes for t in informative]], dtype=np.int64),
        np.array([[t.candidate_passes for t in informative]], dtype=np.int64),
    )
    return SuiteTestResult(float(lower[0]), float(upper[0]), method, len(informative))
