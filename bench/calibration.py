"""The calibration study of compare's suite test, the intervals and the leaderboard
(docs/statistics.md, "Calibration"): run `just calibrate` (or `python bench/calibration.py`)
and paste its output between the markers of docs/statistics.md.

Every cell draws from its own generator seeded by the cell's parameters
(`orchestra.report.stats.calibration.cell_rng`), so tests/report/test_calibration.py recomputes
single cells and checks them against the docs.
"""

from __future__ import annotations

import sys

from orchestra.report.stats.calibration import (
    ATTEMPTS,
    COVERAGE_SUITES,
    DESIGNS,
    DIFFICULTIES,
    LEADERBOARD_BOARDS,
    NIGHTS,
    RATE_LEVELS,
    TASK_COUNTS,
    coverage_cell,
    detection_cell,
    false_alarm_cell,
    leaderboard_cell,
)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def coverage_table() -> list[str]:
    header = ["tasks", "k", *(f"Beta({a:g}, {b:g})" for a, b in DIFFICULTIES)]
    lines = [_row(header), _row(["---"] * len(header))]
    for n in TASK_COUNTS:
        for k in ATTEMPTS:
            cells = [f"{coverage_cell(n, k, difficulty):.3f}" for difficulty in DIFFICULTIES]
            lines.append(_row([str(n), str(k), *cells]))
    return lines


def gate_table() -> list[str]:
    header = ["tasks", "k baseline/candidate", "pass rate", "false alarms", "caught: −10 pts",
              "−20 pts", "−30 pts"]  # fmt: skip
    lines = [_row(header), _row(["---"] * len(header))]
    for n in TASK_COUNTS:
        for kb, kc in DESIGNS:
            for rate in RATE_LEVELS:
                alarms = false_alarm_cell(n, kb, kc, rate)
                caught = [detection_cell(n, kb, kc, rate, fall) for fall in (0.1, 0.2, 0.3)]
                lines.append(_row([str(n), f"{kb}/{kc}", f"{rate:g}", f"{alarms:.3f}",
                                   *(f"{c:.2f}" for c in caught)]))  # fmt: skip
    return lines


def leaderboard_table() -> list[str]:
    lines = [_row(["conditions", "tasks × k", "any pair marked (identical conditions)"])]
    lines.append(_row(["---"] * 3))
    for conditions in (4, 5, 8):
        lines.append(
            _row([str(conditions), "10 × 1", f"{leaderboard_cell(conditions, 10, 1):.3f}"])
        )
        lines.append(
            _row([str(conditions), "10 × 3", f"{leaderboard_cell(conditions, 10, 3):.3f}"])
        )
    return lines


def main() -> None:
    out = [
        "<!-- calibration:begin (bench/calibration.py) -->",
        f"Coverage of the 95 % interval of the mean over tasks ({COVERAGE_SUITES} suites a cell):",
        "",
        *coverage_table(),
        "",
        f"compare's suite gate at α = 0.05 ({NIGHTS} nights a cell; pass rates Beta around the "
        "level, sd 0.1; a fall takes the same share of every task's passes):",
        "",
        *gate_table(),
        "",
        f"Leaderboard at α = 0.05 ({LEADERBOARD_BOARDS} boards a cell, task pass rates 0.5–0.95):",
        "",
        *leaderboard_table(),
        "<!-- calibration:end -->",
    ]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
