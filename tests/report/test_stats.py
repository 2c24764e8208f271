"""Every figure of orchestra.report.stats.inference and power against an independent brute force."""

import itertools
import math
import random
import subprocess
import sys

import pytest

from orchestra.jobs.aggregate import pass_at_k, pass_hat_k
from orchestra.report.stats.inference import fisher_one_sided, holm, wilson


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


def test_pass_at_k_and_pass_hat_k_exist_only_for_k_up_to_n() -> None:
    for n, c, k in ((2, 0, 3), (0, 0, 1), (3, 4, 2), (3, 1, 0)):
        for estimator in (pass_at_k, pass_hat_k):
            with pytest.raises(ValueError, match="1 <= k <= n"):
                estimator(n, c, k)  # pass_at_k(2, 0, 3) was 1.0; pass_hat_k(0, 0, 1) divided by 0


def test_holm_against_its_definition() -> None:
    rng = random.Random(3)
    for _ in range(50):
        ps = [rng.random() for _ in range(rng.randint(1, 7))]
        m = len(ps)
        order = sorted(range(m), key=lambda i: ps[i])
        for rank, index in enumerate(order):
            expected = max(min(1.0, (m - j) * ps[order[j]]) for j in range(rank + 1))
            assert holm(ps)[index] == pytest.approx(expected)


def test_trial_and_agent_modules_never_load_scipy() -> None:
    code = (
        "import sys, orchestra.trial.run, orchestra.agents.agent.cli, orchestra.jobs.runner, "
        "orchestra.jobs.result, orchestra.cli.main; "
        "assert 'scipy' not in sys.modules, 'scipy loaded'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
