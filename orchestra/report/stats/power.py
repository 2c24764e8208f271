"""How small a change a plan of tasks × attempts detects, by simulating the test compare runs.

The model (docs/statistics.md, "Power"): the tasks' pass rates p_i are drawn from a Beta law
with the suite's mean pass rate m and between-task spread s (estimated from the tasks compared:
pooled per-task rates, their variance less the attempt noise; before anything ran, every rate
equally likely: m = 0.5, s = 0.29). The baseline passes Binomial(k_b, p_i) per task, and a
candidate worse by δ passes Binomial(k_c, p_i · (1 − δ/m)): every task loses the same share of
its passes, so the suite's mean falls by exactly δ. Each simulated night is judged by the very
test `orchestra compare` runs (orchestra.report.stats.stratified, one-sided at α), on the same
attempts per task; the smallest δ, in whole points, whose regression is called on at least
80 % of the simulated nights is the detectable change. The nights share their random numbers
across δ (common random numbers), so power grows with δ and the search is a bisection.

numpy and scipy are imported inside the functions: the dry run prints this, no trial runs it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestra.plural import plural
from orchestra.report.stats.inference import P_VALUE_TOLERANCE
from orchestra.report.stats.stratified import regression_p_values

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

POWER = 0.80
SIMULATED_NIGHTS = 400
SEED = 37
#: The most attempts per task `--target-effect` considers before saying "add tasks".
MAX_ATTEMPTS = 20
#: Rates are kept inside (0, 1) so that the Beta law exists; spread within what a mean allows.
RATE_BOUNDS = (0.02, 0.98)
MIN_SPREAD = 0.01


@dataclass(frozen=True)
class Difficulty:
    """The tasks' pass rates the simulation draws: a Beta law of this mean and sd."""

    mean: float
    spread: float
    source: str  # how it was found, for the printed line

    def beta(self) -> tuple[float, float]:
        mean = min(max(self.mean, RATE_BOUNDS[0]), RATE_BOUNDS[1])
        variance = min(max(self.spread, MIN_SPREAD) ** 2, 0.9 * mean * (1 - mean))
        concentration = mean * (1 - mean) / variance - 1
        return mean * concentration, (1 - mean) * concentration

    def text(self) -> str:
        return f"task pass rates ~ mean {self.mean:.2f}, sd {self.spread:.2f} ({self.source})"


#: Before anything ran: every pass rate equally likely (Beta(1, 1)).
ASSUMED = Difficulty(0.5, math.sqrt(1 / 12), "assumed: nothing ran yet")


def observed_difficulty(passes: Sequence[int], attempts: Sequence[int]) -> Difficulty:
    """The mean and between-task sd of per-task pass rates (passes of attempts, both sides
    pooled), the attempt noise p(1 − p)/(k − 1) taken out of their variance."""
    rates = [c / n for c, n in zip(passes, attempts, strict=True)]
    if len(rates) < 2:
        return ASSUMED
    mean = sum(rates) / len(rates)
    variance = sum((r - mean) ** 2 for r in rates) / (len(rates) - 1)
    noise = [r * (1 - r) / (n - 1) for r, n in zip(rates, attempts, strict=True) if n > 1]
    between = max(0.0, variance - (sum(noise) / len(rates) if noise else 0.0))
    return Difficulty(mean, math.sqrt(between), f"observed over {plural(len(rates), 'task')}")


class _Nights:
    """Simulated nights of one design, their random numbers fixed across δ."""

    def __init__(
        self, baseline_n: Sequence[int], candidate_n: Sequence[int], difficulty: Difficulty
    ) -> None:
        import numpy as np

        rng = np.random.default_rng(SEED)
        self.baseline_n, self.candidate_n = list(baseline_n), list(candidate_n)
        tasks = len(baseline_n)
        a, b = difficulty.beta()
        self.mean = a / (a + b)
        self.rates = rng.beta(a, b, size=(SIMULATED_NIGHTS, tasks))
        self.baseline = self._passes(rng.random((SIMULATED_NIGHTS, tasks, max(baseline_n))),
                                     self.rates, self.baseline_n)  # fmt: skip
        self.uniforms = rng.random((SIMULATED_NIGHTS, tasks, max(candidate_n)))

    @staticmethod
    def _passes(
        uniforms: npt.NDArray[np.float64], rates: npt.NDArray[np.float64], attempts: list[int]
    ) -> npt.NDArray[np.int64]:
        import numpy as np

        used = np.arange(uniforms.shape[2])[None, None, :] < np.array(attempts)[None, :, None]
        passes: npt.NDArray[np.int64] = ((uniforms < rates[:, :, None]) & used).sum(axis=2)
        return passes

    def power(self, change: float, alpha: float) -> float:
        rates = self.rates * (1 - change / self.mean)
        candidate = self._passes(self.uniforms, rates, self.candidate_n)
        p_regression, _, _ = regression_p_values(
            self.baseline_n, self.candidate_n, self.baseline, candidate
        )
        return float((p_regression <= alpha + P_VALUE_TOLERANCE).mean())


@dataclass(frozen=True)
class Detectable:
    n_tasks: int
    attempts_baseline: int
    attempts_candidate: int
    alpha: float
    difficulty: Difficulty
    change: float | None  # smallest mean fall (0..1) called with 80 % power; None: none is

    def text(self) -> str:
        attempts = (
            str(self.attempts_baseline)
            if self.attempts_baseline == self.attempts_candidate
            else f"{self.attempts_baseline}/{self.attempts_candidate}"
        )
        plan = (
            f"{plural(self.n_tasks, 'task')} × {attempts} attempt{'s' if attempts != '1' else ''}"
        )
        model = f"(80 % power, one-sided α={self.alpha:g}; {self.difficulty.text()})"
        if self.change is None:
            return f"{plan}: no fall of the pass rate, however large, is detected {model}"
        return f"{plan}: only a fall of ≥ {round(self.change * 100)} points is detected {model}"


def smallest_detectable(nights: _Nights, alpha: float) -> float | None:
    """The smallest whole-point fall with power ≥ 80 % (None: not even the largest)."""
    largest = math.floor(nights.mean * 100)
    if largest < 1 or nights.power(largest / 100, alpha) < POWER:
        return None
    low, high = 0, largest  # power(low) < 80 % ≤ power(high)
    while high - low > 1:
        middle = (low + high) // 2
        if nights.power(middle / 100, alpha) >= POWER:
            high = middle
        else:
            low = middle
    return high / 100


def detectable_change(
    baseline_n: Sequence[int],
    candidate_n: Sequence[int],
    alpha: float,
    difficulty: Difficulty = ASSUMED,
) -> Detectable:
    """What a comparison of tasks with these attempts per side detects (module docstring)."""
    change = None
    if baseline_n:
        change = smallest_detectable(_Nights(baseline_n, candidate_n, difficulty), alpha)
    return Detectable(
        len(baseline_n),
        min(baseline_n, default=1),
        min(candidate_n, default=1),
        alpha,
        difficulty,
        change,
    )


def attempts_needed(
    n_tasks: int, target_effect: float, alpha: float, difficulty: Difficulty = ASSUMED
) -> int | None:
    """Attempts per task (each side) for 80 % power to detect a fall of `target_effect` over
    `n_tasks` tasks; None when even MAX_ATTEMPTS are not enough (add tasks instead)."""
    if not 0 < target_effect <= 1:
        raise ValueError(f"the target effect must be within (0, 1] (got {target_effect:g})")
    if n_tasks < 1:
        return None
    low, high = 0, MAX_ATTEMPTS  # power at k = low < 80 %; at high: checked first

    def enough(attempts: int) -> bool:
        nights = _Nights([attempts] * n_tasks, [attempts] * n_tasks, difficulty)
        return target_effect <= nights.mean and nights.power(target_effect, alpha) >= POWER

    if not enough(high):
        return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def dry_run_power_text(jobs: Sequence[tuple[int, int]], alpha: float = 0.05) -> str:
    """The dry run's statement, one line per job of (tasks, attempts): the smallest fall a
    comparison of this plan against a run like it detects (rates assumed, nothing ran)."""
    return "".join(
        "power (compare against a run like it): "
        f"{detectable_change([attempts] * n_tasks, [attempts] * n_tasks, alpha).text()}\n"
        for n_tasks, attempts in jobs
    )
