"""The numbers docs/statistics.md promises of `orchestra compare` on 10 tasks at k = 1, end to end
through job directories and the command's exit code and `--json`."""

import json
from pathlib import Path

import pytest
import typer
from jobs_builder import TrialSpec, build_job
from typer.testing import CliRunner

from orchestra.cli.report_commands import register

TASKS = [f"task-{i}" for i in range(10)]


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def run_with(jobs: Path, name: str, failing: int) -> Path:
    """10 tasks, one attempt each; the first `failing` fail."""
    return build_job(jobs, name, [
        TrialSpec(task, rewards={"reward": 0.0 if i < failing else 1.0})
        for i, task in enumerate(TASKS)
    ])  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    jobs = tmp_path_factory.mktemp("jobs")
    return {failing: run_with(jobs, f"failing-{failing}", failing) for failing in (0, 1, 3, 8, 10)}


def compare(baseline: Path, candidate: Path, *extra: str) -> tuple[int, dict]:
    result = CliRunner().invoke(
        cli(), ["compare", str(baseline), str(candidate), "--format", "json", *extra]
    )
    assert result.exit_code in (0, 3), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(
    ("failing", "p_at_most", "p_at_least", "code"),
    [(10, 0.001, None, 3), (8, 0.004, None, 3), (3, None, 0.125, 0)],
)
def test_flipped_tasks_against_all_pass(
    runs: dict[int, Path],
    failing: int,
    p_at_most: float | None,
    p_at_least: float | None,
    code: int,
) -> None:
    exit_code, document = compare(runs[0], runs[failing])
    suite = document["suite"]
    assert suite["test"] == "permutation-exact"
    assert suite["discordant"] == {"baseline_only": failing, "candidate_only": 0}
    # One attempt a side: the one-sided exact McNemar test, a fair coin per discordant task.
    assert suite["p_value"] == suite["p_regression"] == pytest.approx(1 / 2**failing)
    assert suite["p_improvement"] == 1.0
    if p_at_most is not None:
        assert suite["p_value"] <= p_at_most
    if p_at_least is not None:
        assert suite["p_value"] >= p_at_least
    assert exit_code == code
    assert document["verdict"] == ("regression" if code == 3 else "no significant change")
    assert suite["mean_difference"] == pytest.approx(-failing / 10)
    assert document["excluded_tasks"] == []


def test_a_run_against_itself_is_no_change(runs: dict[int, Path]) -> None:
    exit_code, document = compare(runs[3], runs[3])
    assert exit_code == 0 and document["verdict"] == "no significant change"
    assert document["suite"]["p_value"] == 1.0 and document["suite"]["mean_difference"] == 0
    assert document["leads"] == []


def test_one_flipped_task_is_a_lead_not_a_failure(runs: dict[int, Path]) -> None:
    exit_code, document = compare(runs[0], runs[1])
    assert exit_code == 0 and document["verdict"] == "no significant change"
    assert document["leads"] == [
        {
            "task": "buzz-native/task-0",
            "change": "regression",
            "difference": -1.0,
            "p_value": pytest.approx(0.5),
            "adjusted_p_value": pytest.approx(1.0),  # Holm over the 10 tasks compared
        }
    ]
    assert document["suite"]["power"] == (
        "10 tasks × 1 attempt: only a fall of ≥ 62 points is detected (80 % power, one-sided "
        "α=0.05; task pass rates ~ mean 0.95, sd 0.00 (observed over 10 tasks))"
    )
    text = CliRunner().invoke(cli(), ["compare", str(runs[0]), str(runs[1])]).stdout
    assert "lead: -100 points, one-sided Fisher p=0.5 (Holm-adjusted over 10 tasks: 1)" in text
    assert "power: 10 tasks × 1 attempt: only a fall of ≥ 62 points" in text


def test_target_effect_prints_the_attempts_needed(runs: dict[int, Path]) -> None:
    result = CliRunner().invoke(
        cli(), ["compare", str(runs[0]), str(runs[3]), "--target-effect", "0.2"]
    )
    assert result.exit_code == 0, result.output
    assert (
        "target effect: to detect a fall of 20 points over 10 tasks at one-sided α=0.05 with "
        "80 % power (task pass rates ~ mean 0.85, sd 0.00 (observed over 10 tasks)): 7 attempts "
        "per task on each side" in result.stdout
    )
    bad = CliRunner().invoke(cli(), ["compare", str(runs[0]), str(runs[3]), "--target-effect", "2"])
    assert bad.exit_code == 1 and "--target-effect must be within (0, 1]" in bad.stderr


def test_excluded_and_changed_tasks_are_listed(tmp_path: Path, runs: dict[int, Path]) -> None:
    candidate = build_job(tmp_path, "partial", [
        TrialSpec(task, rewards={"reward": 1.0}) for task in TASKS[:9]
    ])  # fmt: skip
    config = json.loads((candidate / "config.json").read_text())
    config["plan"]["tasks"][0]["digest"] = "1" * 64
    (candidate / "config.json").write_text(json.dumps(config))
    exit_code, document = compare(runs[0], candidate)
    assert exit_code == 3  # a baseline task the candidate did not score
    assert document["excluded_tasks"] == [
        {"task": "buzz-native/task-9", "status": "missing", "reason": "not run by the candidate"}
    ]
    assert document["changed_task_files"] == ["buzz-native/task-0"]
    text = CliRunner().invoke(cli(), ["compare", str(runs[0]), str(candidate)]).stdout
    assert (
        "warning: buzz-native/task-0: the task's files changed between the two sides "
        "(compared anyway)" in text
    )
