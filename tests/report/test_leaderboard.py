"""`orchestra leaderboard`: ranking, grouping by condition hash, pairwise verdicts, formats."""

import json
from pathlib import Path

import pytest
import typer
from jobs_builder import TrialSpec, build_job
from typer.testing import CliRunner

from orchestra.cli.report_commands import register
from orchestra.report.stats.inference import wilson

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
    # Every task passed both times: tasks are the units, Wilson on 8 of 8.
    assert top["task_mean"]["interval"]["low"] == wilson(8, 8).low
    verdicts = board["matrix"]
    # 2/2 against 0/1 on 7 tasks: each task's failure lands on the weak side with chance 1/3.
    assert verdicts["solo-weak (timeout ×1)"]["solo-strong"]["verdict"] == "regression"
    assert verdicts["solo-weak (timeout ×1)"]["solo-strong"]["p_value"] == pytest.approx(3**-7)
    assert verdicts["solo-strong"]["solo-weak (timeout ×1)"]["verdict"] == "improvement"
    assert verdicts["solo-weak (timeout ×2)"]["solo-weak (timeout ×1)"]["verdict"] == (
        "no significant change"
    )
    text = runner.invoke(cli(), args).stdout
    assert text.splitlines()[1].startswith("1  solo-strong")
    assert "▲ better (p=0.000457)" in text and "shown apart, never pooled" in text
    markdown = runner.invoke(cli(), [*args, "--format", "markdown"]).stdout
    assert markdown.startswith("## Leaderboard") and "| 1 | solo-strong | 8 |" in markdown
    page = tmp_path / "board.html"
    written = runner.invoke(cli(), [*args, "--format", "html", "-o", str(page)])
    assert written.exit_code == 0 and page.read_text().count('<svg class="bar"') == 3


def test_not_a_run_is_a_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli(), ["leaderboard", str(tmp_path / "nope")])
    assert result.exit_code == 1 and result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1
