"""The nightly's calibration, fast subset (the full grid: bench/nightly_calibration.py, its
tables in docs/statistics.md "The nightly decision"): simulated nights through the very
functions `just nightly` runs, fixed seeds. The defect-7 designs that alarmed on 17.5 % (one
task at 60 %) and 29 % (20 tasks at 80 %) of unchanged nights stay at the family's α; a task
falling from 95 % to 50 % at k = 1 is caught within 5 nights."""

import numpy as np
from scipy.stats import binom

from orchestra.paths import PROJECT_ROOT
from orchestra.report.stats.confirm import NIGHTLY_ALPHA, _boschloo_less
from orchestra.report.stats.nightly_study import (
    NIGHTLY_CONFIRM_ATTEMPTS,
    Design,
    detection,
    false_alarms,
)

NIGHTS = 150


def test_the_per_task_test_never_rejects_more_often_than_its_level() -> None:
    """Under no change, over a fine grid of pass rates, the exact share of outcomes whose
    p ≤ α is at most α (fresh attempts against 30, 90 and 3 baseline attempts)."""
    rates = np.linspace(0.001, 0.999, 999)
    for fresh, base in ((12, 30), (24, 90), (4, 3)):
        table = _boschloo_less(fresh, base)
        joint = binom.pmf(np.arange(fresh + 1)[:, None, None], fresh, rates) * binom.pmf(
            np.arange(base + 1)[None, :, None], base, rates
        )
        for alpha in (0.005, 0.02, 0.05):
            size = joint[table <= alpha].sum(axis=0).max()
            assert size <= alpha * 1.001, (fresh, base, alpha, size)


def test_unchanged_nights_stay_quiet() -> None:
    """At most α = 2 % in expectation; with 150 nights per design, 8 alarms would be far
    outside the binomial spread of a 2 % rate (P ≈ 0.01)."""
    for design in (Design(1, 0.6, 1), Design(20, 0.8, 1), Design(10, 0.95, 3)):
        found = false_alarms(design, NIGHTS, seed=7)
        assert found.alarms <= 7, (design, found.alarms)


def test_a_fall_from_95_to_50_percent_is_caught_within_five_nights() -> None:
    found = detection(Design(13, 0.95, 1), 0.95, 0.5, within=5, replicates=NIGHTS, seed=11)
    assert found.rate >= 0.85, found  # 92 % in the full study (docs/statistics.md)


def test_just_nightly_runs_the_design_the_study_measures() -> None:
    justfile = (PROJECT_ROOT / "justfile").read_text(encoding="utf-8")
    assert f"attempts=(--confirm-attempts {NIGHTLY_CONFIRM_ATTEMPTS})" in justfile
    assert f"--alpha {NIGHTLY_ALPHA:g}" in justfile
