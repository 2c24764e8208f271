"""The statistics of the report, compare and leaderboard commands, on `scipy.stats`.

Pass counts here are tiny (1-10 attempts per task, tens of tasks), where normal approximations
mislead: intervals are Wilson score intervals when every unit is a pass or a fail, and
percentile bootstraps over tasks otherwise; tests are exact (binomial, Fisher; the suite's
permutation test is orchestra.report.stats.stratified). Attempts of one task are not
independent, so the unit of every suite-level figure is the task (per-task means first, then
over tasks).

scipy is imported inside the functions: this module is imported by the commands that report
and compare, and the trial path must never pay for loading it. Every random draw is seeded so
the same inputs print the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: One seed for every resampling, so a report is reproducible byte for byte.
SEED = 29
BOOTSTRAP_RESAMPLES = 9999
CONFIDENCE = 0.95
#: Floating p-values are sums; 2/1024 must not miss α by an ulp.
P_VALUE_TOLERANCE = 1e-12

IntervalMethod = Literal["wilson", "bootstrap"]


@dataclass(frozen=True)
class Bounds:
    low: float
    high: float
    method: IntervalMethod


def _rng() -> np.random.Generator:
    import numpy as np

    return np.random.default_rng(SEED)


def wilson_bounds(rate: float, n: float, z: float | None = None) -> tuple[float, float]:
    """The Wilson score interval of a proportion `rate` seen over `n` (possibly effective,
    non-integer) units, at `z` (default: the normal quantile of CONFIDENCE). Its bounds are
    exactly 0 or 1 only when the rate is."""
    if z is None:
        z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    denominator = n + z * z
    centre = (rate * n + z * z / 2) / denominator
    half = z / denominator * math.sqrt(n * rate * (1 - rate) + z * z / 4)
    low = 0.0 if rate <= 0 else min(rate, max(0.0, centre - half))
    high = 1.0 if rate >= 1 else max(rate, min(1.0, centre + half))
    return low, high


def wilson(successes: int, n: int) -> Bounds:
    """The 95 % Wilson score interval of `successes` of `n` (n = 0: the whole [0, 1])."""
    if n <= 0:
        return Bounds(0.0, 1.0, "wilson")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..{n} (got {successes})")
    return Bounds(*wilson_bounds(successes / n, n), "wilson")


def _is_binary(value: float) -> bool:
    return value in (0.0, 1.0)


def _bootstrap(
    data: tuple[npt.NDArray[np.float64], ...],
    statistic: Callable[..., Any],
) -> tuple[float, float]:
    from scipy.stats import bootstrap

    result = bootstrap(
        data,
        statistic,
        n_resamples=BOOTSTRAP_RESAMPLES,
        paired=len(data) > 1,
        vectorized=True,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=_rng(),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def ratio_interval(numerators: Sequence[float], denominators: Sequence[float]) -> Bounds | None:
    """95 % interval of sum(numerators) / sum(denominators), tasks being the units.

    When every task's ratio is 0 or 1 (one binary attempt each, or each task all-pass or
    all-fail) the tasks are Bernoulli units: Wilson on the tasks that passed, which stays
    meaningful at 0 % and 100 %. Otherwise a seeded percentile bootstrap over tasks (resampling
    whole tasks keeps their attempts together). None with no task, or a single task that is
    neither (the caller's per-trial interval says more).
    """
    import numpy as np

    pairs = [(n, d) for n, d in zip(numerators, denominators, strict=True) if d > 0]
    if not pairs:
        return None
    ratios = [n / d for n, d in pairs]
    if all(_is_binary(r) for r in ratios):
        return wilson(sum(r == 1.0 for r in ratios), len(ratios))
    if len(pairs) == 1:
        return None
    if len(set(ratios)) == 1:
        return Bounds(ratios[0], ratios[0], "bootstrap")
    num = np.array([n for n, _ in pairs], dtype=np.float64)
    den = np.array([d for _, d in pairs], dtype=np.float64)

    def ratio(n: npt.NDArray[np.float64], d: npt.NDArray[np.float64], axis: int) -> Any:
        return n.sum(axis=axis) / d.sum(axis=axis)

    low, high = _bootstrap((num, den), ratio)
    return Bounds(low, high, "bootstrap")


def mean_interval(values: Sequence[float]) -> Bounds | None:
    """95 % interval of the mean of per-task values (see `ratio_interval`)."""
    return ratio_interval(values, [1.0] * len(values))


def difference_interval(differences: Sequence[float]) -> Bounds | None:
    """95 % paired bootstrap interval of the mean per-task difference (candidate − baseline)."""
    import numpy as np

    if not differences:
        return None
    if len(set(differences)) == 1:
        return Bounds(differences[0], differences[0], "bootstrap")

    def mean(x: npt.NDArray[np.float64], axis: int) -> Any:
        return x.mean(axis=axis)

    low, high = _bootstrap((np.array(differences, dtype=np.float64),), mean)
    return Bounds(low, high, "bootstrap")


# --- tests -----------------------------------------------------------------------------------


def fisher_one_sided(
    candidate_passes: int,
    candidate_n: int,
    baseline_passes: int,
    baseline_n: int,
    alternative: Literal["less", "greater"],
) -> float:
    """One-sided Fisher exact p-value that the candidate's pass rate is lower ("less") or
    higher ("greater") than the baseline's (rows: candidate, baseline; columns: pass, fail)."""
    for name, passes, n in (
        ("candidate", candidate_passes, candidate_n),
        ("baseline", baseline_passes, baseline_n),
    ):
        if n < 0 or not 0 <= passes <= n:
            raise ValueError(f"{name}: passes must be within 0..n (got {passes}/{n})")
    import numpy as np
    from scipy.stats import fisher_exact

    table = np.array(
        [
            [candidate_passes, candidate_n - candidate_passes],
            [baseline_passes, baseline_n - baseline_passes],
        ]
    )
    return min(1.0, float(fisher_exact(table, alternative=alternative).pvalue))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values, in the order given."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def significant(p_value: float, alpha: float) -> bool:
    return p_value <= alpha + P_VALUE_TOLERANCE
