"""The fast subset of the calibration study (bench/calibration.py): single cells recomputed
through the same functions, against the tables pasted into docs/statistics.md."""

import re

import pytest

from orchestra.paths import PROJECT_ROOT
from orchestra.report.stats.calibration import (
    DIFFICULTIES,
    coverage_cell,
    false_alarm_cell,
    leaderboard_cell,
    regression_rate,
)

DOCS = (PROJECT_ROOT / "docs" / "statistics.md").read_text()


def _gate_row(n_tasks: int, design: str, rate: str) -> list[str]:
    match = re.search(rf"^\| {n_tasks} \| {design} \| {rate} \| (.*) \|$", DOCS, re.M)
    assert match, f"no row {n_tasks} {design} {rate} in docs/statistics.md"
    return [cell.strip() for cell in match.group(1).split("|")]


@pytest.mark.parametrize(("n_tasks", "baseline_k", "candidate_k", "rate"), [
    (10, 1, 5, 0.8), (10, 5, 1, 0.8), (6, 1, 1, 0.6), (40, 3, 3, 0.6),
])  # fmt: skip
def test_false_alarm_cells_match_the_docs_and_stay_within_alpha(
    n_tasks: int, baseline_k: int, candidate_k: int, rate: float
) -> None:
    measured = false_alarm_cell(n_tasks, baseline_k, candidate_k, rate)
    assert measured <= 0.05
    assert _gate_row(n_tasks, f"{baseline_k}/{candidate_k}", f"{rate:g}")[0] == f"{measured:.3f}"


def test_a_leaderboard_cell_matches_the_docs() -> None:
    measured = leaderboard_cell(5, 10, 3)
    assert measured <= 0.05
    assert f"| 5 | 10 × 3 | {measured:.3f} |" in DOCS


def test_the_gate_catches_more_as_the_fall_grows() -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    rates = rng.beta(8, 2, size=(500, 10))
    caught = [regression_rate(10, 5, 5, rates, fall, np.random.default_rng(2)) for fall in
              (0.0, 0.1, 0.2, 0.3)]  # fmt: skip
    assert caught == sorted(caught) and caught[0] <= 0.05 and caught[-1] >= 0.8


def test_a_coverage_row_matches_the_docs() -> None:
    cells = [f"{coverage_cell(6, 5, difficulty):.3f}" for difficulty in DIFFICULTIES]
    assert "| 6 | 5 | " + " | ".join(cells) + " |" in DOCS
    assert min(float(c) for c in cells) >= 0.93
