"""Power by simulation of the test compare runs: the printed smallest detectable fall agrees
with an independent simulation (other draws, other seed, the per-night test function) within
3 points, and `--target-effect`'s attempts reach 80 % power where one attempt fewer does not."""

import numpy as np
import pytest

from orchestra.report.stats.power import (
    ASSUMED,
    Difficulty,
    attempts_needed,
    detectable_change,
    dry_run_power_text,
)
from orchestra.report.stats.stratified import TaskCounts, suite_regression_test

ALPHA = 0.05
NIGHTS = 1000


def independent_power(
    baseline_k: int, candidate_k: int, n_tasks: int, difficulty: Difficulty, fall: float
) -> float:
    """Nights drawn afresh, each judged one at a time by compare's test."""
    rng = np.random.default_rng(2024)
    a, b = difficulty.beta()
    mean = a / (a + b)
    caught = 0
    for _ in range(NIGHTS):
        rates = rng.beta(a, b, size=n_tasks)
        baseline = rng.binomial(baseline_k, rates)
        candidate = rng.binomial(candidate_k, rates * (1 - fall / mean))
        tasks = [
            TaskCounts(baseline_k, int(x), candidate_k, int(y))
            for x, y in zip(baseline, candidate, strict=True)
        ]
        caught += suite_regression_test(tasks).p_regression <= ALPHA
    return caught / NIGHTS


@pytest.mark.parametrize(
    ("n_tasks", "baseline_k", "candidate_k", "difficulty"),
    [
        (10, 5, 5, ASSUMED),
        (6, 5, 5, ASSUMED),
        (20, 1, 1, Difficulty(0.8, 0.15, "test")),
        (10, 1, 5, Difficulty(0.8, 0.1, "test")),
    ],
)
def test_the_printed_fall_has_80_percent_power_within_3_points(
    n_tasks: int, baseline_k: int, candidate_k: int, difficulty: Difficulty
) -> None:
    detectable = detectable_change(
        [baseline_k] * n_tasks, [candidate_k] * n_tasks, ALPHA, difficulty
    )
    assert detectable.change is not None
    above = independent_power(
        baseline_k, candidate_k, n_tasks, difficulty, detectable.change + 0.03
    )
    below = independent_power(
        baseline_k, candidate_k, n_tasks, difficulty, detectable.change - 0.03
    )
    assert below < 0.80 <= above, (detectable.text(), below, above)


def test_a_plan_too_small_says_no_fall_is_detected() -> None:
    # 10 tasks × 1 attempt, rates uniform: even every task failing (a 50-point fall) is caught
    # on fewer than 80 % of nights (the old normal approximation promised 60 points).
    assert detectable_change([1] * 10, [1] * 10, ALPHA).change is None
    assert independent_power(1, 1, 10, ASSUMED, 0.5) < 0.8
    assert dry_run_power_text([(10, 5), (4, 1)]).splitlines() == [
        "power (compare against a run like it): "
        + detectable_change([5] * 10, [5] * 10, ALPHA).text(),
        "power (compare against a run like it): 4 tasks × 1 attempt: no fall of the pass rate, "
        "however large, is detected (80 % power, one-sided α=0.05; task pass rates ~ mean "
        "0.50, sd 0.29 (assumed: nothing ran yet))",
    ]


def test_attempts_needed_are_just_enough() -> None:
    difficulty = Difficulty(0.8, 0.1, "test")
    needed = attempts_needed(10, 0.2, ALPHA, difficulty)
    assert needed is not None and needed > 1
    assert independent_power(needed, needed, 10, difficulty, 0.23) >= 0.80
    assert independent_power(needed - 1, needed - 1, 10, difficulty, 0.17) < 0.80
    assert attempts_needed(3, 0.05, ALPHA) is None  # add tasks
    with pytest.raises(ValueError):
        attempts_needed(10, 0.0, ALPHA)
