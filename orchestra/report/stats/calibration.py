"""The calibration study: how often each gate alarms when nothing changed, how often it catches
a real fall, and how often the intervals cover, by simulation through the very functions
`orchestra compare`, the summary and the leaderboard run (vectorised over simulated suites).

`bench/calibration.py` runs the full grid and prints the tables of docs/statistics.md;
tests/report run a fast subset of the same functions. Every draw comes from the generator
passed in, so a table is reproducible from its seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from orchestra.report.stats.clustered import clustered_spread
from orchestra.report.stats.inference import P_VALUE_TOLERANCE, holm
from orchestra.report.stats.stratified import regression_p_values

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

ALPHA = 0.05
SEED = 36
#: Task difficulty laws of the grid: Beta(a, b) of the tasks' pass rates.
DIFFICULTIES: tuple[tuple[float, float], ...] = (
    (0.5, 0.5),
    (1.0, 1.0),
    (2.0, 2.0),
    (2.0, 1.0),
    (5.0, 1.0),
)
TASK_COUNTS = (6, 10, 20, 40)
ATTEMPTS = (1, 2, 3, 5)
#: (baseline, candidate) attempts per task of the gate's grid.
DESIGNS = ((1, 1), (1, 5), (5, 1), (3, 3), (5, 5))
RATE_LEVELS = (0.6, 0.8, 0.95)
RATE_SPREAD = 0.1
COVERAGE_SUITES = 4000
NIGHTS = 2000
LEADERBOARD_BOARDS = 1000


def cell_rng(*parameters: float) -> np.random.Generator:
    """The generator of one cell, seeded by its parameters (so one cell can be recomputed)."""
    import numpy as np

    return np.random.default_rng([SEED, *(round(p * 1000) for p in parameters)])


def level_rates(rate: float, nights: int, n_tasks: int, rng: np.random.Generator) -> Any:
    """Task pass rates around a level: Beta of mean `rate` and sd RATE_SPREAD."""
    concentration = rate * (1 - rate) / RATE_SPREAD**2 - 1
    return rng.beta(rate * concentration, (1 - rate) * concentration, size=(nights, n_tasks))


def coverage_cell(n_tasks: int, attempts: int, difficulty: tuple[float, float]) -> float:
    rng = cell_rng(n_tasks, attempts, *difficulty)
    return coverage(n_tasks, attempts, difficulty, COVERAGE_SUITES, rng)


def false_alarm_cell(n_tasks: int, baseline_k: int, candidate_k: int, rate: float) -> float:
    return detection_cell(n_tasks, baseline_k, candidate_k, rate, 0.0)


def detection_cell(
    n_tasks: int, baseline_k: int, candidate_k: int, rate: float, fall: float
) -> float:
    rng = cell_rng(n_tasks, baseline_k, candidate_k, rate, fall)
    rates = level_rates(rate, NIGHTS, n_tasks, rng)
    return regression_rate(n_tasks, baseline_k, candidate_k, rates, fall, rng)


def leaderboard_cell(conditions: int, n_tasks: int, attempts: int) -> float:
    rng = cell_rng(conditions, n_tasks, attempts)
    rates = [0.5 + 0.45 * i / (n_tasks - 1) for i in range(n_tasks)]
    return leaderboard_false_alarms(conditions, n_tasks, attempts, rates, LEADERBOARD_BOARDS, rng)


def coverage(
    n_tasks: int,
    attempts: int,
    difficulty: tuple[float, float],
    suites: int,
    rng: np.random.Generator,
) -> float:
    """Share of simulated suites whose interval of the mean over tasks holds the true mean of
    the difficulty law (tasks drawn from it, each run `attempts` times)."""
    import numpy as np

    a, b = difficulty
    rates = rng.beta(a, b, size=(suites, n_tasks))
    passes = rng.binomial(attempts, rates)
    spread = clustered_spread(
        passes / attempts, np.full(n_tasks, attempts, dtype=np.int64), np.ones(n_tasks)
    )
    truth = a / (a + b)
    return float(((spread.low <= truth) & (truth <= spread.high)).mean())


def _passes(
    rng: np.random.Generator, attempts: int, rates: npt.NDArray[np.float64]
) -> npt.NDArray[np.int64]:
    import numpy as np

    return np.asarray(rng.binomial(attempts, rates), dtype=np.int64)


def regression_rate(
    n_tasks: int,
    baseline_k: int,
    candidate_k: int,
    rates: npt.NDArray[np.float64],
    fall: float,
    rng: np.random.Generator,
    alpha: float = ALPHA,
) -> float:
    """Share of simulated nights (rows of `rates`, suites × tasks) on which compare's suite
    test calls a regression when each task's pass rate falls by the share `fall` of the mean
    (0: nothing changed, the false-alarm rate; else the detection rate)."""
    baseline = _passes(rng, baseline_k, rates)
    candidate = _passes(rng, candidate_k, rates * (1 - fall / rates.mean(axis=1, keepdims=True)))
    p_regression, _, _ = regression_p_values(
        [baseline_k] * n_tasks, [candidate_k] * n_tasks, baseline, candidate
    )
    return float((p_regression <= alpha + P_VALUE_TOLERANCE).mean())


def beta_rates(
    difficulty: tuple[float, float], nights: int, n_tasks: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    a, b = difficulty
    return rng.beta(a, b, size=(nights, n_tasks))


def leaderboard_false_alarms(
    conditions: int,
    n_tasks: int,
    attempts: int,
    rates: Sequence[float],
    boards: int,
    rng: np.random.Generator,
    alpha: float = ALPHA,
) -> float:
    """Share of leaderboards of identical conditions with any pair marked better or worse
    (two-sided pair p-values, Holm-adjusted over the pairs, as the leaderboard does)."""
    import numpy as np

    pairs = [(i, j) for i in range(conditions) for j in range(i + 1, conditions)]
    passes = rng.binomial(attempts, np.array(rates), size=(boards, conditions, n_tasks))
    two_sided = np.empty((boards, len(pairs)))
    for column, (i, j) in enumerate(pairs):
        lower, upper, _ = regression_p_values(
            [attempts] * n_tasks, [attempts] * n_tasks, passes[:, i], passes[:, j]
        )
        two_sided[:, column] = np.minimum(1.0, 2 * np.minimum(lower, upper))
    alarms = sum(min(holm(list(row))) <= alpha + P_VALUE_TOLERANCE for row in two_sided.tolist())
    return alarms / boards
