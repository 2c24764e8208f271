"""The statistics of the report, compare and leaderboard commands, on `scipy.stats`.

Pass counts here are tiny (1-10 attempts per task, tens of tasks), where normal approximations
mislead: intervals are Wilson score intervals when every unit is a pass or a fail, and
percentile bootstraps over tasks otherwise; tests are exact (binomial, Fisher, sign-flip
enumeration) wherever the enumeration fits. Attempts of one task are not independent, so the
unit of every suite-level figure is the task (per-task means first, then over tasks).

scipy is imported inside the functions: this module is imported by the commands that report
and compare, and the trial path must never pay for loading it. Every random draw is seeded so
the same inputs print the same figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: One seed for every resampling, so a report is reproducible byte for byte.
SEED = 29
BOOTSTRAP_RESAMPLES = 9999
#: Sign-flip tests enumerate every flip up to this many; beyond it, a seeded Monte Carlo.
EXACT_FLIP_LIMIT = 2**20
MONTE_CARLO_FLIPS = 200_000
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


def wilson(successes: int, n: int) -> Bounds:
    """The 95 % Wilson score interval of `successes` of `n` (n = 0: the whole [0, 1])."""
    if n <= 0:
        return Bounds(0.0, 1.0, "wilson")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..{n} (got {successes})")
    from scipy.stats import binomtest

    interval = binomtest(successes, n).proportion_ci(CONFIDENCE, method="wilson")
    # At 0 or n successes the bound is exactly 0 or 1; rounding would leave 5e-17 behind.
    low = 0.0 if successes == 0 else float(interval.low)
    high = 1.0 if successes == n else float(interval.high)
    return Bounds(low, high, "wilson")


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


def mcnemar_exact(baseline_only: int, candidate_only: int) -> float:
    """Two-sided exact McNemar p-value: a binomial(½) test on the discordant pairs (tasks that
    passed on one side only). No discordant pair: nothing changed, p = 1."""
    discordant = baseline_only + candidate_only
    if discordant == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(baseline_only, discordant, 0.5).pvalue)


@dataclass(frozen=True)
class FlipTest:
    p_value: float
    exact: bool  # every sign flip enumerated (else a seeded Monte Carlo)
    flips: int  # sign patterns enumerated or drawn


def sign_flip_test(differences: Sequence[float]) -> FlipTest:
    """Two-sided sign-flip permutation test of mean(differences) = 0 (paired, per task).

    Under no change each task's difference is as likely to have come out with the other sign;
    zero differences flip to themselves, so only the non-zero ones are enumerated: exactly up to
    2^20 patterns, by a seeded Monte Carlo of 200 000 beyond.
    """
    import numpy as np
    from scipy.stats import permutation_test

    nonzero = [d for d in differences if d != 0]
    if len(nonzero) < 2:  # ±d: each sign pattern is as extreme as the other (scipy needs two)
        return FlipTest(1.0, True, 2 ** len(nonzero))
    exact = 2 ** len(nonzero) <= EXACT_FLIP_LIMIT
    flips = 2 ** len(nonzero) if exact else MONTE_CARLO_FLIPS

    def mean(x: npt.NDArray[np.float64], axis: int) -> Any:
        return x.mean(axis=axis)

    result = permutation_test(
        (np.array(nonzero, dtype=np.float64),),
        mean,
        permutation_type="samples",
        vectorized=True,
        n_resamples=EXACT_FLIP_LIMIT if exact else MONTE_CARLO_FLIPS,
        batch=2**16,
        alternative="two-sided",
        rng=_rng(),
    )
    return FlipTest(min(1.0, float(result.pvalue)), exact, flips)


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
