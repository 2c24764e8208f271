"""Every figure of orchestra.report.stats.inference and power against an independent brute force."""

import itertools
import math
import random
import subprocess
import sys

import pytest

from orchestra.jobs.aggregate import pass_at_k, pass_hat_k
from orchestra.report.stats.inference import (
    fisher_one_sided,
    holm,
    mean_interval,
    wilson,
)
from orchestra.report.stats.power import (
    attempts_needed,
    detectable_change,
    dry_run_power_text,
    minimum_tasks,
)


def test_unbiased_estimators_are_the_means_over_all_k_subsets() -> None:
    """pass@k = share of k-subsets of the attempts with a pass; pass^k = share all-pass."""
    for n in range(1, 7):
        for c in range(n + 1):
            outcomes = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(outcomes, k))
                assert pass_at_k(n, c, k) == pytest.approx(
                    sum(any(s) for s in subsets) / len(subsets)
                )
                assert pass_hat_k(n, c, k) == pytest.approx(
                    sum(all(s) for s in subsets) / len(subsets)
                )


def test_wilson_matches_its_closed_form() -> None:
    z = 1.959963984540054
    for n in range(1, 12):
        for c in range(n + 1):
            p = c / n
            centre = (p + z * z / (2 * n)) / (1 + z * z / n)
            half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
            bounds = wilson(c, n)
            assert bounds.low == pytest.approx(max(0.0, centre - half), abs=1e-9)
            assert bounds.high == pytest.approx(min(1.0, centre + half), abs=1e-9)
    assert wilson(0, 3).low == 0.0 and wilson(3, 3).high == 1.0
    assert (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(4, 3)


def _hypergeometric_less(c_pass: int, c_n: int, b_pass: int, b_n: int) -> float:
    total = c_pass + b_pass
    return sum(
        math.comb(c_n, a) * math.comb(b_n, total - a) / math.comb(c_n + b_n, total)
        for a in range(max(0, total - b_n), c_pass + 1)
    )


def test_fisher_is_the_hypergeometric_tail() -> None:
    for c_n, b_n in ((1, 1), (3, 3), (4, 2), (10, 10)):
        for c_pass in range(c_n + 1):
            for b_pass in range(b_n + 1):
                expected = _hypergeometric_less(c_pass, c_n, b_pass, b_n)
                got = fisher_one_sided(c_pass, c_n, b_pass, b_n, "less")
                assert got == pytest.approx(min(1.0, expected), abs=1e-12)
                mirrored = _hypergeometric_less(c_n - c_pass, c_n, b_n - b_pass, b_n)
                assert fisher_one_sided(c_pass, c_n, b_pass, b_n, "greater") == pytest.approx(
                    min(1.0, mirrored), abs=1e-12
                )
    assert fisher_one_sided(0, 3, 3, 3, "less") == pytest.approx(0.05)


def test_holm_against_its_definition() -> None:
    rng = random.Random(3)
    for _ in range(50):
        ps = [rng.random() for _ in range(rng.randint(1, 7))]
        m = len(ps)
        order = sorted(range(m), key=lambda i: ps[i])
        for rank, index in enumerate(order):
            expected = max(min(1.0, (m - j) * ps[order[j]]) for j in range(rank + 1))
            assert holm(ps)[index] == pytest.approx(expected)


def test_mean_interval_kinds() -> None:
    # All tasks pass or fail: Wilson on the tasks.
    bounds = mean_interval([1.0] * 7 + [0.0] * 3)
    assert bounds is not None and bounds.method == "wilson"
    assert (bounds.low, bounds.high) == pytest.approx((wilson(7, 10).low, wilson(7, 10).high))
    ten_of_ten = mean_interval([1.0] * 10)
    assert ten_of_ten is not None and ten_of_ten.high == 1.0 and ten_of_ten.low < 0.75
    # Fractional per-task means: a seeded bootstrap that contains the mean, reproducibly.
    values = [1.0, 2 / 3, 1 / 3, 1.0, 0.0, 2 / 3]
    first, second = mean_interval(values), mean_interval(values)
    assert first == second and first is not None and first.method == "bootstrap"
    assert first.low <= sum(values) / len(values) <= first.high
    assert mean_interval([]) is None and mean_interval([0.5]) is None


def test_power_statements() -> None:
    assert minimum_tasks(0.05) == 6 and minimum_tasks(0.01) == 8
    assert detectable_change(5, 1, 1, 0.05).change is None
    assert detectable_change(6, 1, 1, 0.05).text() == (
        "6 tasks × 1 attempt: only a change of 100 points (every task flipping) can be detected "
        "(α=0.05)"
    )
    assert detectable_change(12, 1, 1, 0.05).text() == (
        "12 tasks × 1 attempt: only a change of ≥ 58 points can be detected (80 % power, α=0.05)"
    )
    # z(0.975) + z(0.8) = 2.8016; sd = sqrt(0.25 · 2 / 5) at 5 attempts a side.
    assert detectable_change(10, 5, 5, 0.05).change == pytest.approx(
        2.8016 * math.sqrt(0.1) / math.sqrt(10), abs=1e-3
    )
    # Never below the exact test's floor: 6 tasks of 10 all flipped at k = 1.
    assert detectable_change(10, 1, 1, 0.05, pass_rate=0.95).change == pytest.approx(0.6)
    assert attempts_needed(10, 0.2, 0.05) == math.ceil(2.8016**2 * 0.5 / (10 * 0.04))
    assert attempts_needed(4, 0.2, 0.05) is None
    assert dry_run_power_text([(6, 1), (4, 3)]).splitlines() == [
        "power (compare against a run like it): 6 tasks × 1 attempt: only a change of 100 "
        "points (every task flipping) can be detected (α=0.05)",
        "power (compare against a run like it): 4 tasks × 3 attempts: no change can be "
        "detected at α=0.05 (the exact test needs at least 6 tasks)",
    ]
    with pytest.raises(ValueError):
        attempts_needed(10, 0.0, 0.05)


def test_trial_and_agent_modules_never_load_scipy() -> None:
    code = (
        "import sys, orchestra.trial.run, orchestra.agents.agent.cli, orchestra.jobs.runner, "
        "orchestra.jobs.result, orchestra.cli.main; "
        "assert 'scipy' not in sys.modules, 'scipy loaded'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
