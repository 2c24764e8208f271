"""The interval of a suite's pass rate over tasks, with attempts clustered in their task.

The clustered analysis of Miller 2024 ("Adding Error Bars to Evals"): the suite figure is a
(weighted) mean over tasks of each task's pass rate, and its variance has two parts, how much
the tasks differ from one another (between tasks, shrunk only by more tasks) and each task's
own attempt noise p(1 − p)/(k − 1) (within tasks, shrunk by more attempts too). The observed
spread of the task rates estimates their sum; the within part alone is a floor under it.

The interval is Wilson's score interval on the effective number of observations
n_eff = R(1 − R) / variance, with the t(n − 1) quantile in place of the normal one (few tasks
estimate the variance). n_eff is held within [tasks, attempts]: the attempts of a task are at
worst one observation (every attempt alike), at best independent ones; when the rate is 0 or
1, or the tasks are alike, nothing measures it and the task count is taken. The interval
therefore always contains the rate and is never zero-width. Its coverage over 6–40 tasks,
k = 1–5 and task difficulties from Beta(0.5, 0.5) to Beta(5, 1) is at least 94.9 % (the
calibration study, bench/calibration.py, docs/statistics.md "Intervals"); designs outside that
grid are flagged.

numpy and scipy are imported inside the functions (see orchestra.report.stats.inference).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

from orchestra.report.stats.inference import CONFIDENCE, wilson_bounds

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The designs the calibration study covers (docs/statistics.md, "Intervals").
CALIBRATED_TASKS = (6, 40)
CALIBRATED_ATTEMPTS = (1, 5)


def t_quantile(n_tasks: int) -> float:
    """The two-sided 95 % quantile of t(n − 1) (normal for one task: nothing to estimate)."""
    if n_tasks < 2:
        return NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    from scipy.stats import t

    return float(t.ppf(0.5 + CONFIDENCE / 2, n_tasks - 1))


@dataclass(frozen=True)
class ClusteredMean:
    value: float
    low: float
    high: float
    n_tasks: int
    attempts: int  # scored attempts in all (the task count when attempts are not known)
    variance: float  # of the mean, as the interval uses it
    #: the within-task part of `variance` (None: one attempt per task, not separable)
    within: float | None
    effective_n: float

    @property
    def between(self) -> float | None:
        return None if self.within is None else max(0.0, self.variance - self.within)

    @property
    def design_effect(self) -> float:
        """How many attempts count as one independent observation."""
        return self.attempts / self.effective_n

    def half_width(self, attempts_factor: float = 1.0, tasks_factor: float = 1.0) -> float:
        """Half the interval's width, and what it would be with the attempts per task or the
        tasks multiplied: the within part shrinks with both, the between part with tasks only."""
        now = (self.high - self.low) / 2
        if self.variance == 0:
            # a rate of 0 or 1: every attempt counts (`clustered_spread`), so the interval
            # is Wilson's again on the multiplied attempts, at the multiplied tasks' quantile
            tasks = max(1, round(self.n_tasks * tasks_factor))
            effective = self.effective_n * attempts_factor * tasks_factor
            low, high = wilson_bounds(self.value, effective, t_quantile(tasks))
            return float(high - low) / 2
        within = self.within or 0.0
        variance = (self.variance - within + within / attempts_factor) / tasks_factor
        return now * math.sqrt(variance / self.variance)

    def calibrated(self) -> bool:
        """Within the study's grid, or beyond it where intervals only get better (more tasks)."""
        per_task = self.attempts / self.n_tasks
        return self.n_tasks >= CALIBRATED_TASKS[0] and per_task <= CALIBRATED_ATTEMPTS[1]


@dataclass(frozen=True)
class Spread:
    """The mean's parts, one entry per simulated suite (arrays) or a single suite."""

    value: npt.NDArray[np.float64]
    variance: npt.NDArray[np.float64]
    within: npt.NDArray[np.float64] | None
    effective_n: npt.NDArray[np.float64]
    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]


def clustered_spread(
    rates: npt.NDArray[np.float64],
    attempts: npt.NDArray[np.int64] | None,
    weights: npt.NDArray[np.float64],
) -> Spread:
    """The interval of each row of `rates` (suites × tasks), vectorised so that the
    calibration study runs these very lines on thousands of simulated suites."""
    import numpy as np

    n = rates.shape[1]
    total = weights.sum()
    value = (rates * weights).sum(axis=1) / total
    spread = np.zeros_like(value)
    if n > 1:
        squares = (weights**2 * (rates - value[:, None]) ** 2).sum(axis=1)
        spread = n / (n - 1) * squares / total**2
    within = None
    if attempts is not None and (attempts > 1).any():
        several = attempts > 1
        noise = weights**2 * rates * (1 - rates) / np.where(several, attempts - 1, 1)
        within = np.where(several, noise, 0.0).sum(axis=1) / total**2
    variance = spread if within is None else np.maximum(spread, within)
    n_attempts = float(n if attempts is None else attempts.sum())
    inside = (value > 0) & (value < 1) & (variance > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        measured = np.clip(value * (1 - value) / variance, n, n_attempts)
    # A rate of 0 or 1 measures no spread: as many observations as attempts, like the one
    # failure away from it (a rate with no spread at all would otherwise jump to the tasks).
    effective = np.where(inside, measured, np.where(variance > 0, float(n), n_attempts))
    variance = np.where(variance > 0, variance, value * (1 - value) / effective)
    low, high = wilson_bounds(value, effective, t_quantile(n))
    return Spread(value, variance, within, effective, low, high)


def clustered_mean(
    rates: Sequence[float],
    attempts: Sequence[int] | None = None,
    weights: Sequence[float] | None = None,
) -> ClusteredMean | None:
    """The weighted mean of per-task `rates` (each 0..1; `weights` default 1) and its 95 %
    interval. `attempts`: each task's scored attempts (None: values with no attempt noise of
    their own to separate, e.g. pass^k, taken as one observation per task). None: no task."""
    import numpy as np

    n = len(rates)
    if n == 0:
        return None
    counts = None if attempts is None else np.array(attempts, dtype=np.int64)
    spread = clustered_spread(
        np.array([rates], dtype=np.float64),
        counts,
        np.ones(n) if weights is None else np.array(weights, dtype=np.float64),
    )
    return ClusteredMean(
        value=float(spread.value[0]),
        low=float(spread.low[0]),
        high=float(spread.high[0]),
        n_tasks=n,
        attempts=n if counts is None else int(counts.sum()),
        variance=float(spread.variance[0]),
        within=None if spread.within is None else float(spread.within[0]),
        effective_n=float(spread.effective_n[0]),
    )


def difference_bounds(
    baseline: Sequence[tuple[float, int]], candidate: Sequence[tuple[float, int]]
) -> tuple[float, float] | None:
    """The 95 % interval of the mean over tasks of (candidate rate − baseline rate), each side
    a (rate, attempts) per task: the clustered interval above on the differences mapped onto
    0..1, its variance floored by both sides' attempt noise. It contains the mean change and is
    never zero-width: all ten tasks flipped at k = 1 gives [−1, −0.32], not [−1, −1]."""
    n = len(baseline)
    if n == 0:
        return None
    differences = [c - b for (b, _), (c, _) in zip(baseline, candidate, strict=True)]
    value = sum(differences) / n
    spread = sum((d - value) ** 2 for d in differences) / (n - 1) / n if n > 1 else 0.0
    within = sum(r * (1 - r) / (k - 1) for r, k in (*baseline, *candidate) if k > 1) / n**2
    variance = max(spread, within) / 4  # of (d + 1) / 2
    rate = (value + 1) / 2
    most = float(sum(k for _, k in (*baseline, *candidate)))
    effective = most
    if 0 < rate < 1 and variance > 0:
        effective = min(most, max(float(n), rate * (1 - rate) / variance))
    elif variance > 0:
        effective = float(n)
    low, high = wilson_bounds(rate, effective, t_quantile(n))
    return 2 * float(low) - 1, 2 * float(high) - 1
