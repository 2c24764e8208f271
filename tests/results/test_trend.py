"""`orchestra trend`: marks, Wilson intervals, and the text, markdown and JSON outputs."""

import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.report.stats.inference import wilson
from orchestra.report.trend.text import render_trend, trend_markdown
from orchestra.results.schema import open_database
from orchestra.results.trend import Rate, TaskPoint, Trend, classify, rate, read_trend


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def point(run: str, passed: int, scored: int) -> TaskPoint:
    outcome = (
        "none" if not scored else "pass" if passed == scored else "fail" if not passed else "mixed"
    )
    return TaskPoint(run=run, outcome=outcome, errors=0, rate=Rate(passed=passed, scored=scored,
                     pass_rate=None, low=None, high=None))  # fmt: skip


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([(1, 1), (1, 1), (1, 1)], ("stable", None, None)),
        ([(1, 1), (0, 1), (1, 1)], ("flaky", "r1", None)),  # pass → fail → pass
        ([(1, 1), (1, 2), (0, 2)], ("flaky", "r1", None)),  # mixed in r1
        ([(1, 1), (1, 1), (0, 1)], ("flipped", "r2", "fail")),
        ([(0, 1), (0, 0), (1, 1)], ("flipped", "r2", "pass")),  # an unscored run is skipped
        ([(0, 0), (0, 0)], ("stable", None, None)),
    ],
)
def test_marks(history: list[tuple[int, int]], expected: tuple[object, ...]) -> None:
    points = [point(f"r{i}", passed, scored) for i, (passed, scored) in enumerate(history)]
    assert classify([*points, None]) == expected  # a run without the task changes nothing


def test_intervals_are_wilson_intervals() -> None:
    for passed, scored in ((0, 1), (1, 2), (2, 3), (9, 10)):
        interval = rate(passed, scored)
        # The report's Wilson interval (checked against the closed form in tests/report).
        bounds = wilson(passed, scored)
        assert interval.low == pytest.approx(bounds.low)
        assert interval.high == pytest.approx(bounds.high)
    assert rate(0, 0).low is None


def test_the_three_nights(results_db: sqlite3.Connection) -> None:
    (condition,) = read_trend(results_db).conditions
    assert [run.name for run in condition.runs] == ["nightly-1", "nightly-2", "nightly-3"]
    assert [(r.overall.passed, r.overall.scored) for r in condition.runs] == [
        (4, 4),
        (4, 5),
        (2, 5),
    ]
    marks = {
        t.task_name.removeprefix("buzz-native/"): (t.mark, t.since, t.now) for t in condition.tasks
    }
    assert marks == {
        "memory-retrieval": ("stable", None, None),
        "multiline-message": ("flaky", "nightly-2", None),
        "reply-to-thread": ("flipped", "nightly-3", "fail"),
        "user-mention": ("stable", None, None),
    }  # fmt: skip


def test_directories_and_their_database_give_the_same_trend(
    three_runs: list[Path], results_db: sqlite3.Connection, tmp_path: Path
) -> None:
    code, stdout, stderr = invoke("trend", *map(str, reversed(three_runs)), "--json")
    assert code == 0, stderr
    assert Trend.model_validate_json(stdout) == read_trend(results_db)
    assert json.loads(stdout)["conditions"][0]["tasks"][1]["points"][1]["rate"]["low"] > 0


@pytest.mark.parametrize("width", [120, 80, 40])
def test_the_table_fits_the_terminal(results_db: sqlite3.Connection, width: int) -> None:
    console = Console(width=width, record=True, force_terminal=False)
    render_trend(read_trend(results_db), console, width)
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= width
    text = "\n".join(lines)
    assert "flaky since #2" in text and "fails since #3" in text
    if width >= 80:
        assert "0.00 [0.00–0.66]" in text and "#1" in lines[4]
        retrieval = next(line for line in lines if "memory-retrieval" in line)
        assert retrieval.split()[-5:] == ["err", "1/1", "1/1", "1.00", "[0.21–1.00]"]
    if width == 40:
        assert "not shown at this width: #1" in text


def test_markdown_has_every_runs_interval(results_db: sqlite3.Connection) -> None:
    markdown = trend_markdown(read_trend(results_db))
    row = next(line for line in markdown.splitlines() if "multiline-message" in line)
    assert row == (
        "| regression | buzz-native/multiline-message | 2/2 1.00 [0.34–1.00] "
        "| 1/2 0.50 [0.09–0.91] | 0/2 0.00 [0.00–0.66] | flaky since #2 |"
    )


def test_bad_input_is_one_line(three_runs: list[Path], tmp_path: Path) -> None:
    database = tmp_path / "r.sqlite"
    assert invoke("db", str(three_runs[0]), "-o", str(database))[0] == 0
    cases = {
        (str(tmp_path / "nope"),): f"error: {tmp_path / 'nope'}: no such run or job directory\n",
        (str(database), str(three_runs[0])): (
            f"error: {database}: give one results database, or run and job directories, not both\n"
        ),
    }
    for args, line in cases.items():
        assert invoke("trend", *args) == (1, "", line)


def test_an_empty_database_says_so(tmp_path: Path) -> None:
    database = tmp_path / "empty.sqlite"
    open_database(database, create=True).close()
    assert invoke("trend", str(database)) == (0, "no runs with trials: nothing to trend\n", "")
