"""`orchestra leaderboard`: ranking, grouping by condition hash, pairwise verdicts, formats."""

import json
from pathlib import Path

import pytest
import typer
from jobs_builder import TrialSpec, build_job
from scipy.stats import t
from typer.testing import CliRunner

from orchestra.cli.report_commands import register

TASKS = [f"task-{i}" for i in range(8)]


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def job(jobs: Path, name: str, passing: int, condition: str, multiplier: float = 1.0) -> Path:
    """8 tasks at k = 1, the first `passing` pass."""
    return build_job(jobs, name, [
        TrialSpec(task, rewards={"reward": 1.0 if i < passing else 0.0})
        for i, task in enumerate(TASKS)
    ], condition=condition, timeout_multiplier=multiplier)  # fmt: skip


def test_ranked_grouped_and_compared(tmp_path: Path) -> None:
    strong = job(tmp_path, "strong", 8, "solo-strong")
    weak = job(tmp_path, "weak", 1, "solo-weak")
    weak_slow = job(tmp_path, "weak-slow", 2, "solo-weak", multiplier=2.0)
    strong_again = build_job(tmp_path, "strong-again", [
        TrialSpec(task, attempt=1, rewards={"reward": 1.0}) for task in TASKS
    ], condition="solo-strong")  # fmt: skip
    runner = CliRunner()
    args = ["leaderboard", str(weak), str(strong), str(weak_slow), str(strong_again), str(strong)]
    result = runner.invoke(cli(), [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    board = json.loads(result.stdout)
    labels = [entry["label"] for entry in board["entries"]]
    # One condition hash pooled (strong, strong-again); one name with two multipliers apart.
    assert labels == ["solo-strong", "solo-weak (timeout ×2)", "solo-weak (timeout ×1)"]
    assert board["shown_apart"] == ["solo-weak"]
    top = board["entries"][0]
    assert top["jobs"] == ["strong", "strong-again"] and top["scored"] == 16
    # Every task passed both times: no spread, as many observations as the 16 attempts, with
    # the t quantile of 8 tasks (docs/statistics.md, "Intervals").
    z = t.ppf(0.975, 7)
    assert top["task_mean"]["interval"]["low"] == pytest.approx(16 / (16 + z * z))
    verdicts = board["matrix"]
    # 2/2 against 0/1 on 7 tasks: each task's failure lands on the weak side with chance 1/3.
    assert verdicts["solo-weak (timeout ×1)"]["solo-strong"]["verdict"] == "regression"
    # Two-sided (twice the one-sided p), Holm-adjusted over the 3 pairs.
    weak_strong = verdicts["solo-weak (timeout ×1)"]["solo-strong"]
    assert weak_strong["p_value"] == pytest.approx(2 * 3**-7)
    assert weak_strong["adjusted_p_value"] == pytest.approx(3 * 2 * 3**-7)
    assert verdicts["solo-strong"]["solo-weak (timeout ×1)"]["verdict"] == "improvement"
    assert verdicts["solo-weak (timeout ×2)"]["solo-weak (timeout ×1)"]["verdict"] == (
        "no significant change"
    )
    text = runner.invoke(cli(), args).stdout
    assert text.splitlines()[1].startswith("1  solo-strong")
    assert "▲ better (p=0.000914, Holm 0.00274)" in text and "shown apart, never pooled" in text
    markdown = runner.invoke(cli(), [*args, "--format", "markdown"]).stdout
    assert markdown.startswith("## Leaderboard") and "| 1 | solo-strong | 8 |" in markdown
    page = tmp_path / "board.html"
    written = runner.invoke(cli(), [*args, "--format", "html", "-o", str(page)])
    assert written.exit_code == 0 and page.read_text().count('<svg class="bar"') == 3


def test_not_a_run_is_a_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli(), ["leaderboard", str(tmp_path / "nope")])
    assert result.exit_code == 1 and result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1


def test_one_lost_condition_among_identical_ones_is_marked_nowhere(tmp_path: Path) -> None:
    """4 conditions of 10 tasks at k = 1; one lost 6 tasks that the three identical ones pass:
    raw two-sided p = 2/64 ≈ 0.03 against each, Holm-adjusted over the 6 pairs above 0.05."""
    tasks = [f"task-{i}" for i in range(10)]

    def condition(name: str, passing: int) -> Path:
        return build_job(tmp_path, name, [
            TrialSpec(task, rewards={"reward": 1.0 if i < passing else 0.0})
            for i, task in enumerate(tasks)
        ], condition=name)  # fmt: skip

    jobs = [condition(f"same-{i}", 10) for i in range(3)] + [condition("lost", 4)]
    result = CliRunner().invoke(cli(), ["leaderboard", *map(str, jobs), "--format", "json"])
    assert result.exit_code == 0, result.output
    matrix = json.loads(result.stdout)["matrix"]
    for row, cells in matrix.items():
        for column, cell in cells.items():
            assert cell["verdict"] == "no significant change", (row, column, cell)
            if "lost" in (row, column):
                assert cell["p_value"] == pytest.approx(2 / 64)
                assert cell["adjusted_p_value"] > 0.05
    text = CliRunner().invoke(cli(), ["leaderboard", *map(str, jobs)]).stdout
    assert "▲ better" not in text and "▼ worse" not in text
    assert "= same (p=0.0312, Holm 0.188)" in text
