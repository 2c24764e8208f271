"""`compare`: exactly the regressions that happened, with significance notes, and exit codes."""

import json
from pathlib import Path

import pytest
import typer
from jobs_builder import TrialSpec, build_job
from typer.testing import CliRunner

from orchestra.cli.report_commands import register
from orchestra.paths import PROJECT_ROOT
from orchestra.report.compare.comparison import compare_paths, exit_code
from orchestra.report.compare.format import format_markdown, format_text
from orchestra.report.stats.inference import wilson

MENTION_PASS = {"reward": 1.0, "answer_correct": 1.0, "user_p_tagged": 1.0}
MENTION_FAIL = {"reward": 0.0, "answer_correct": 1.0, "user_p_tagged": 0.0}
THREAD_PASS = {"reward": 1.0, "reply_to_thread": 1.0}


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def regression_jobs(jobs: Path) -> tuple[Path, Path]:
    baseline = build_job(jobs, "baseline", [
        TrialSpec("user-mention", rewards=MENTION_PASS),
        TrialSpec("reply-to-thread", rewards=THREAD_PASS),
    ])  # fmt: skip
    candidate = build_job(jobs, "candidate", [
        TrialSpec("user-mention", rewards=MENTION_FAIL),
        TrialSpec("reply-to-thread", rewards=THREAD_PASS),
    ])  # fmt: skip
    return baseline, candidate


def test_one_failing_task_is_exactly_the_regression(tmp_path: Path) -> None:
    baseline, candidate = regression_jobs(tmp_path)
    comparison = compare_paths(baseline, candidate)
    assert comparison.regressed_tasks == ["buzz-native/user-mention"]
    assert comparison.improved_tasks == []
    # 1/1 → 0/1 is p = 0.5: reported, never significant, so it does not fail.
    assert comparison.significant_regressions == [] and comparison.missing_tasks == []
    assert exit_code(comparison) == 0
    tasks = {t.task: t for t in comparison.tasks}
    assert tasks["buzz-native/reply-to-thread"].status == "unchanged"
    changes = {m.metric: m for m in tasks["buzz-native/user-mention"].metrics}
    assert {name for name, m in changes.items() if m.change == "regression"} == {
        "reward",
        "user_p_tagged",
    }
    assert changes["answer_correct"].change == "unchanged"
    assert changes["user_p_tagged"].baseline == (1, 1)
    assert changes["user_p_tagged"].candidate == (0, 1)
    # The task is a lead: its Fisher p and the Holm-adjusted one over the 2 tasks compared.
    assert changes["reward"].p_value == pytest.approx(0.5)
    assert tasks["buzz-native/user-mention"].adjusted_p_value == pytest.approx(1.0)
    assert comparison.verdict == "no significant change"
    text = format_text(comparison)
    assert "REGRESSION   buzz-native/user-mention (regression)" in text
    assert "user_p_tagged: 1/1 → 0/1" in text
    assert "    lead: -100 points, one-sided Fisher p=0.5 (Holm-adjusted over 2 tasks: 1)" in text
    assert "reply-to-thread" not in text.split("suite:")[0].split("candidate:")[1]
    assert text.rstrip().endswith(
        "power: 2 tasks × 1 attempt: no fall of the pass rate, however large, is detected (80 % "
        "power, one-sided α=0.05; task pass rates ~ mean 0.75, sd 0.00 (observed over 2 tasks))\n"
        "result: 1 task regressed, 0 improved, 1 unchanged\n"
        "verdict: no significant change (α=0.05)\n"
        "exit 0: no regression significant at α=0.05 and no baseline task missing from the "
        "candidate"
    )
    reverse = compare_paths(candidate, baseline)
    assert exit_code(reverse) == 0 and reverse.improved_tasks == ["buzz-native/user-mention"]


def attempts_job(jobs: Path, name: str, rewards: list[float]) -> Path:
    """A workflow job of cross-thread-requests with one trial per reward (k = len(rewards))."""
    return build_job(jobs, name, [
        TrialSpec("cross-thread-requests", layer="workflow", attempt=i + 1,
                  rewards={"reward": r, "both_answered": r})
        for i, r in enumerate(rewards)
    ], attempts=len(rewards))  # fmt: skip


def test_a_run_compared_with_itself_after_an_errored_task_excludes_it(tmp_path: Path) -> None:
    """docs/statistics.md "What compare excludes": a task the baseline did not score is left
    out with its reason, never counted as lost (the nightly's pre-check compares the baseline
    with itself)."""
    run = build_job(tmp_path, "errored", [
        TrialSpec("user-mention", status="error", exception_type="AgentLaunchError"),
        TrialSpec("reply-to-thread", rewards=THREAD_PASS),
    ])  # fmt: skip
    result = CliRunner().invoke(cli(), ["compare", str(run), str(run)])
    assert result.exit_code == 0, result.output
    comparison = compare_paths(run, run)
    assert comparison.missing_tasks == [] and exit_code(comparison) == 0
    reason = (
        "the baseline scored no trial of it (1 error(s), 0 cancelled): excluded from the comparison"
    )
    assert [excluded.model_dump() for excluded in comparison.excluded_tasks] == [
        {"task": "buzz-native/user-mention", "status": "excluded", "reason": reason}
    ]
    assert f"EXCLUDED     buzz-native/user-mention (regression): {reason}" in result.output
    assert "1 excluded" in result.output


def test_k_greater_than_one_carries_a_significance_note(tmp_path: Path) -> None:
    def job(name: str, rewards: list[float]) -> Path:
        return attempts_job(tmp_path, name, rewards)

    comparison = compare_paths(job("b", [1.0, 1.0, 1.0]), job("c", [1.0, 0.0, 0.0]))
    reward = comparison.tasks[0].metrics[0]
    assert reward.metric == "reward" and reward.change == "regression"
    assert reward.p_value == pytest.approx(0.2)
    bounds = wilson(1, 3)
    assert reward.candidate_interval == pytest.approx((bounds.low, bounds.high))
    assert reward.note == "Wilson 95% [0.44, 1.00] → [0.06, 0.79]"
    assert not reward.significant and exit_code(comparison) == 0
    markdown = format_markdown(comparison)
    assert (
        "| buzz-native/cross-thread-requests | workflow | regression | reward | 3/3 | 1/3 |"
        in markdown
    )


def test_unscored_missing_and_new_tasks(tmp_path: Path) -> None:
    baseline = build_job(tmp_path, "b", [
        TrialSpec("user-mention", rewards=MENTION_PASS),
        TrialSpec("reply-to-thread", rewards=THREAD_PASS),
    ])  # fmt: skip
    candidate = build_job(tmp_path, "c", [
        TrialSpec("user-mention", status="error", exception_type="AgentLaunchError"),
        TrialSpec("multiline-message", rewards={"reward": 1.0}),
    ])  # fmt: skip
    comparison = compare_paths(baseline, candidate)
    statuses = {t.task: t.status for t in comparison.tasks}
    assert statuses == {
        "buzz-native/user-mention": "unscored",
        "buzz-native/reply-to-thread": "missing",
        "buzz-native/multiline-message": "new",
    }
    assert comparison.regressed_tasks == []
    assert comparison.missing_tasks == [
        "buzz-native/reply-to-thread",
        "buzz-native/user-mention",
    ]
    assert exit_code(comparison) == 3
    assert (
        format_text(comparison)
        .rstrip()
        .endswith(
            "exit 3: 2 tasks missing from the candidate: buzz-native/reply-to-thread, "
            "buzz-native/user-mention"
        )
    )


def test_the_suite_verdict_drives_the_exit_code(tmp_path: Path) -> None:
    """Six tasks 3/3 → 2/3: dealing each task's six attempts out again, its one failure lands
    on the candidate's side half the time, so all six do with p = 1/64 ≤ 0.05 (exit 3); at
    --alpha 0.01 it is not significant (exit 0)."""
    names = [f"t{i}" for i in range(6)]

    def job(name: str, failing_attempt: int | None) -> Path:
        return build_job(tmp_path, name, [
            TrialSpec(task, layer="workflow", attempt=a,
                      rewards={"reward": 0.0 if a == failing_attempt else 1.0})
            for a in (1, 2, 3) for task in names
        ], attempts=3)  # fmt: skip

    baseline, candidate = job("b", None), job("c", 3)
    runner = CliRunner()
    for alpha, code in ((None, 3), ("0.01", 0)):
        args = ["compare", str(baseline), str(candidate), *(["--alpha", alpha] if alpha else [])]
        result = runner.invoke(cli(), args)
        assert result.exit_code == code, (alpha, result.output)
        assert (
            "exact one-sided permutation test of attempts within tasks "
            "p(regression)=0.0156 p(improvement)=1" in result.stdout
        )
        last = result.stdout.rstrip().splitlines()[-1]
        if code == 3:
            assert last == (
                "exit 3: a significant suite-level regression (one-sided p=0.0156 ≤ α=0.05)"
            )
        else:
            assert last.startswith("exit 0: no regression significant at α=0.01"), last
    bad = runner.invoke(cli(), ["compare", str(baseline), str(baseline), "--alpha", "1.5"])
    assert bad.exit_code == 1 and "--alpha must be between 0 and 1 (got 1.5)" in bad.stderr


def test_a_candidate_without_the_baseline_tasks_fails(tmp_path: Path) -> None:
    baseline, _ = regression_jobs(tmp_path)
    other = build_job(tmp_path, "other", [TrialSpec("multiline-message", rewards={"reward": 1.0})])
    result = CliRunner().invoke(cli(), ["compare", str(baseline), str(other)])
    assert result.exit_code == 3, result.output
    assert result.stdout.rstrip().splitlines()[-1] == (
        "exit 3: 2 tasks missing from the candidate: buzz-native/reply-to-thread, "
        "buzz-native/user-mention"
    )


def test_cli_formats_and_exit_codes(tmp_path: Path) -> None:
    baseline, candidate = regression_jobs(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli(), ["compare", str(baseline), str(candidate), "--format", "json"])
    assert result.exit_code == 0, result.output  # a single attempt: not significant
    document = json.loads(result.stdout)
    assert document["regressed_tasks"] == ["buzz-native/user-mention"]
    assert document["alpha"] == 0.05 and document["significant_regressions"] == []
    same = runner.invoke(cli(), ["compare", str(baseline), str(baseline), "--format", "markdown"])
    assert same.exit_code == 0 and "result: 0 tasks regressed" in same.stdout
    # A saved report.json is a valid baseline too.
    report = runner.invoke(cli(), ["report", str(baseline)])
    assert report.exit_code == 0, report.output
    saved = runner.invoke(cli(), ["compare", str(baseline / "report.json"), str(candidate)])
    assert saved.exit_code == 0 and "REGRESSION" in saved.stdout
    missing = runner.invoke(cli(), ["compare", str(tmp_path / "nope"), str(candidate)])
    assert missing.exit_code == 1
    assert (
        missing.stderr.strip()
        == f"error: {tmp_path / 'nope'}: no such run or job directory or report file"
    )
    bad = runner.invoke(cli(), ["compare", str(baseline), str(candidate), "--format", "yaml"])
    assert bad.exit_code == 2


def test_malformed_saved_reports_are_one_line_errors(tmp_path: Path) -> None:
    baseline, _ = regression_jobs(tmp_path)
    runner = CliRunner()
    for name, content in (
        ("list.json", "[1, 2]"),
        ("noconditions.json", '{"conditions": 3}'),
        ("nolayers.json", '{"conditions": [{"condition": "c"}]}'),
        (
            "notasks.json",
            '{"conditions": [{"condition": "c", "layers": {"r": {"tasks": {"buzz-native/user-mention": {}}}}}]}',
        ),
    ):
        path = tmp_path / name
        path.write_text(content)
        result = runner.invoke(cli(), ["compare", str(path), str(baseline)])
        assert result.exit_code == 1, (name, result.output)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, name
    not_job = runner.invoke(cli(), ["compare", str(tmp_path), str(baseline)])
    assert not_job.exit_code == 1
    assert "a directory of 2 jobs, not a run or job: baseline, candidate" in not_job.stderr


@pytest.mark.parametrize("old", ["2026-12-02.json", "2026-12-04.json"])
def test_a_baseline_saved_by_an_earlier_version_still_compares(old: str) -> None:
    """The nightly keeps report.json files as baselines: one written before the statistics
    (no `successes`: the reward metric's passes count) compares like today's own."""
    reports = PROJECT_ROOT / "tests" / "fixtures" / "report-json"
    today = reports / "2026-12-07.json"
    against_old = compare_paths(reports / old, today)
    against_today = compare_paths(today, today)
    # the same verdict, tests, p-values and per-task outcomes (the label names the file)
    assert against_old.model_dump(exclude={"baseline"}) == against_today.model_dump(
        exclude={"baseline"}
    )
    assert against_old.suite.n_tasks == 3
    assert against_old.verdict == "no significant change"
    result = CliRunner().invoke(cli(), ["compare", str(reports / old), str(today)])
    assert result.exit_code == 0, result.output
