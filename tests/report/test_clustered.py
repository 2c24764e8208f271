"""Intervals over tasks that cover: the clustered interval of a suite's pass rate contains the
rate, is never zero-width, and covers the suite's true mean at least 93 % of the time over the
calibration grid (the fast subset of bench/calibration.py)."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from jobs_builder import TrialSpec, build_job
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.report.stats.calibration import coverage
from orchestra.report.stats.clustered import clustered_mean, difference_bounds, t_quantile
from orchestra.report.stats.inference import wilson_bounds


def test_a_rate_lies_strictly_inside_its_interval_in_summarize_json(tmp_path: Path) -> None:
    """5 tasks at 5/5 and 5 at 0/1 (their other attempts errored): pass rate 25/30."""
    trials = [
        TrialSpec(f"all-{i}", attempt=a, rewards={"reward": 1.0})
        for i in range(5)
        for a in range(1, 6)
    ]
    for i in range(5):
        trials.append(TrialSpec(f"none-{i}", attempt=1, rewards={"reward": 0.0}))
        trials += [
            TrialSpec(f"none-{i}", attempt=a, status="error", exception_type="AgentProcessExited")
            for a in range(2, 6)
        ]
    job = build_job(tmp_path, "k5", trials, attempts=5)
    result = CliRunner().invoke(app, ["summarize", "--json", str(job)])
    assert result.exit_code == 0, result.output
    totals = json.loads(result.stdout)["conditions"][0]["totals"]
    rate, interval = totals["pass_rate"], totals["pass_rate_interval"]
    assert rate == pytest.approx(25 / 30)
    assert interval["low"] < rate < interval["high"]  # was [0.24, 0.76]
    mean = totals["task_mean"]
    assert mean["interval"]["low"] < mean["value"] == 0.5 < mean["interval"]["high"]
    assert mean["uncertainty"]["between_share"] == 1.0  # every task passed all or none
    assert mean["uncertainty"]["calibrated"] is True


def test_intervals_contain_their_rate_and_are_never_zero_width() -> None:
    for rates, attempts in [
        ([0.5] * 10, [2] * 10),  # was [0.50, 0.50]
        ([1.0] * 10, [5] * 10),
        ([1.0] * 9 + [0.8], [5] * 10),
        ([0.0] * 6, [1] * 6),
        ([0.2, 0.4, 1.0, 0.6, 0.8, 0.8], [5] * 6),
    ]:
        mean = clustered_mean(rates, attempts)
        assert mean is not None
        assert mean.low <= mean.value <= mean.high and mean.low < mean.high
        assert mean.low < mean.value or mean.value == 0
        assert mean.value < mean.high or mean.value == 1
    # 50 of 50 and 49 of 50: the rate with more evidence against it never gets the narrower
    # interval from below (was [0.72, 1.00] against [0.94, 1.00]).
    all_pass = clustered_mean([1.0] * 10, [5] * 10)
    one_fail = clustered_mean([1.0] * 9 + [0.8], [5] * 10)
    assert all_pass is not None and one_fail is not None and all_pass.low > one_fail.low
    # Every task flipped from pass to fail at k = 1: not [−1, −1].
    flipped = difference_bounds([(1.0, 1)] * 10, [(0.0, 1)] * 10)
    assert flipped is not None and flipped[0] == -1.0 and -1.0 < flipped[1] < -0.3
    # Identical sides: a change of 0 inside an interval of some width.
    same = difference_bounds([(0.5, 2)] * 10, [(0.5, 2)] * 10)
    assert same is not None and same[0] < 0 < same[1]


def test_the_uncertainty_splits_into_between_and_within_tasks() -> None:
    rates = [0.6, 0.8, 1.0, 0.4, 0.2, 1.0, 1.0, 0.8, 0.6, 0.4]
    mean = clustered_mean(rates, [5] * 10)
    assert mean is not None
    value = sum(rates) / 10
    spread = sum((r - value) ** 2 for r in rates) / 9 / 10  # the observed variance of the mean
    within = sum(r * (1 - r) / 4 for r in rates) / 100  # attempt noise p(1 − p)/(k − 1)
    assert mean.variance == pytest.approx(spread) and mean.within == pytest.approx(within)
    assert mean.between == pytest.approx(spread - within)
    assert mean.effective_n == pytest.approx(value * (1 - value) / spread)
    assert mean.design_effect == pytest.approx(50 / mean.effective_n)
    # Twice the attempts shrink only the within part; twice the tasks shrink both.
    now = mean.half_width()
    assert mean.half_width(attempts_factor=2) == pytest.approx(
        now * math.sqrt((spread - within / 2) / spread)
    )
    assert mean.half_width(tasks_factor=2) == pytest.approx(now / math.sqrt(2))
    # Every attempt passed: twice the attempts or the tasks count twice the observations.
    perfect = clustered_mean([1.0] * 10, [3] * 10)
    assert perfect is not None and perfect.effective_n == 30
    assert perfect.half_width(attempts_factor=2) == pytest.approx(
        (1 - wilson_bounds(1.0, 60, t_quantile(10))[0]) / 2
    )
    assert perfect.half_width(tasks_factor=2) == pytest.approx(
        (1 - wilson_bounds(1.0, 60, t_quantile(20))[0]) / 2
    )
    assert (
        perfect.half_width(tasks_factor=2)
        < perfect.half_width(attempts_factor=2)
        < perfect.half_width()
    )
    # One attempt per task: not separable.
    assert clustered_mean([1.0, 0.0, 1.0], [1, 1, 1]).within is None  # type: ignore[union-attr]


@pytest.mark.parametrize("difficulty", [(0.5, 0.5), (1.0, 1.0), (5.0, 1.0)])
@pytest.mark.parametrize(("n_tasks", "attempts"), [(6, 1), (6, 5), (10, 2), (40, 5)])
def test_coverage_at_least_93_percent(
    difficulty: tuple[float, float], n_tasks: int, attempts: int
) -> None:
    covered = coverage(n_tasks, attempts, difficulty, suites=4000, rng=np.random.default_rng(3))
    assert covered >= 0.93


def test_the_summary_prints_where_the_uncertainty_comes_from(tmp_path: Path) -> None:
    """Both shares, the design effect, the effective n and the what-ifs; a design outside
    the calibrated grid (here 3 tasks) gets a warning line."""
    outcomes = {"a": [1.0, 1.0, 0.0], "b": [0.0, 0.0, 0.0], "c": [1.0, 1.0, 1.0]}
    small = build_job(tmp_path, "small", [
        TrialSpec(task, attempt=a + 1, rewards={"reward": reward})
        for task, rewards in outcomes.items() for a, reward in enumerate(rewards)
    ], attempts=3)  # fmt: skip
    result = CliRunner().invoke(app, ["summarize", str(small)], terminal_width=200)
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("uncertainty ±"))
    assert re.search(
        r"\d+% between tasks, \d+% within tasks; design effect \d\.\d \(effective n \d+\.\d of "
        r"9 attempts\); with twice the attempts ±\d+, twice the tasks ±\d+$",
        line,
    ), line
    assert "warning: 3 tasks × 3 attempts is outside the calibrated designs" in result.stdout
