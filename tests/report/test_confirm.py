"""The confirmation verdict a run driver asks for per task, against brute force."""

import math

import pytest

from orchestra.report.stats.confirm import confirm_task, target_p_value


def test_target_p_value_is_the_binomial_tail() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            expected = sum(math.comb(n, i) * 0.8**i * 0.2 ** (n - i) for i in range(c + 1))
            assert target_p_value(c, n, 0.8) == pytest.approx(expected)
    assert target_p_value(0, 5, 0.8) == pytest.approx(0.2**5)  # the 0.0003


def test_all_failing_is_below_contract_as_soon_as_it_cannot_change() -> None:
    failures: list[float | None] = []
    for attempt in range(1, 6):
        failures.append(0.0)
        verdict = confirm_task([1.0], failures, max_attempts=5)
        # 0/4 and 0/5, 1/5 are all below an 80 % contract: stop after the fourth.
        assert verdict.final == (attempt >= 4), attempt
        assert verdict.verdict == ("below contract" if attempt >= 4 else "pending")
    assert verdict.decided_by == "reliability target"
    assert verdict.p_baseline == pytest.approx(1 / 6)  # 1/1 against 0/5: the baseline barely moves


def test_a_flip_that_was_noise() -> None:
    verdict = confirm_task([1.0], [0.0, 1.0, 1.0, 1.0, 1.0], max_attempts=5)
    assert verdict.verdict == "no regression" and verdict.final and verdict.decided_by is None
    # Two passes early cannot yet rule out a contract miss (0 passes in the 3 left would).
    early = confirm_task([1.0], [0.0, 1.0], max_attempts=5)
    assert early.verdict == "pending" and not early.final


def test_the_baseline_decides_when_it_has_attempts_enough() -> None:
    verdict = confirm_task([1.0] * 10, [1.0] * 3 + [0.0] * 7, max_attempts=10, target=0.1)
    assert verdict.verdict == "regression" and verdict.decided_by == "baseline"
    # 13 passes in all, the candidate's 3 the fewest it can have: one table, C(10,3)/C(20,13).
    assert verdict.p_baseline == pytest.approx(math.comb(10, 3) / math.comb(20, 13), rel=1e-9)
