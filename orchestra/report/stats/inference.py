"""The statistics of the report, compare and leaderboard commands, on `scipy.stats`.

Pass counts here are tiny (1-10 attempts per task, tens of tasks), where normal approximations
mislead: intervals are Wilson score intervals over a task's attempts, and over tasks the
clustered intervals of orchestra.report.stats.clustered; tests are exact (binomial, Fisher; the suite's
permutation test is orchestra.report.stats.stratified). Attempts of one task are not
independent, so the unit of every suite-level figure is the task (per-task means first, then
over tasks).

scipy is imported inside the functions: this module is imported by the commands that report
and compare, and the trial path must never pay for loading it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

CONFIDENCE = 0.95
#: Floating p-values are sums; 2/1024 must not miss α by an ulp.
P_VALUE_TOLERANCE = 1e-12

IntervalMethod = Literal["wilson", "clustered"]


@dataclass(frozen=True)
class Bounds:
    low: float
    high: float
    method: IntervalMethod


def wilson_bounds(rate: Any, n: Any, z: float | None = None) -> tuple[Any, Any]:
    """The Wilson score interval of a proportion `rate` seen over `n` (possibly effective,
    non-integer) units, at `z` (default: the normal quantile of CONFIDENCE); floats or numpy
    arrays alike. Its bounds are exactly 0 or 1 only when the rate is, and contain it."""
    import numpy as np

    if z is None:
        z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    denominator = n + z * z
    centre = (rate * n + z * z / 2) / denominator
    half = z / denominator * np.sqrt(n * rate * (1 - rate) + z * z / 4)
    low = np.where(rate <= 0, 0.0, np.minimum(rate, np.maximum(0.0, centre - half)))
    high = np.where(rate >= 1, 1.0, np.maximum(rate, np.minimum(1.0, centre + half)))
    return low, high


def wilson(successes: int, n: int) -> Bounds:
    """The 95 % Wilson score interval of `successes` of `n` (n = 0: the whole [0, 1])."""
    if n <= 0:
        return Bounds(0.0, 1.0, "wilson")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..{n} (got {successes})")
    low, high = wilson_bounds(successes / n, n)
    return Bounds(float(low), float(high), "wilson")


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
