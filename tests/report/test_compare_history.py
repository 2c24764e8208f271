"""`compare --baseline-history DB` (docs/statistics.md "The nightly decision"): each task's
baseline pooled from the condition's recent runs, only where they measured the same thing;
one decision over the suite test and the tasks confirmed by their fresh attempts."""

from pathlib import Path

import typer
from jobs_builder import TrialSpec, build_job
from typer.testing import CliRunner

from orchestra.cli.report_commands import register
from orchestra.results.database import add_directory
from orchestra.results.history import PoolKey, read_history
from orchestra.results.schema import open_database

PASS = {"reward": 1.0, "answer_correct": 1.0}
FAIL = {"reward": 0.0, "answer_correct": 0.0}
TASKS = ("user-mention", "reply-to-thread", "multiline-message")
MENTION = "buzz-native/user-mention"


def history_db(tmp_path: Path, runs: int = 3, *, other_timeout: bool = True) -> Path:
    """`runs` nights where every task passed its one attempt, and one night run with twice
    the timeouts (never pooled)."""
    database = tmp_path / "results.db"
    connection = open_database(database, create=True)
    for night in range(runs):
        job = build_job(
            tmp_path / "history", f"night-{night}", [TrialSpec(t, rewards=PASS) for t in TASKS]
        )
        add_directory(connection, job)
    if other_timeout:
        slow = build_job(
            tmp_path / "history", "slow", [TrialSpec(t, rewards=FAIL) for t in TASKS],
            timeout_multiplier=2.0,
        )  # fmt: skip
        add_directory(connection, slow)
    connection.close()
    return database


def candidate(tmp_path: Path, mention: list[dict[str, float]], name: str = "tonight") -> Path:
    """Tonight: user-mention's attempts as given (the first is attempt 1 of k = 1, the rest
    are confirmation attempts), the other tasks pass."""
    trials = [TrialSpec("user-mention", attempt=i + 1, rewards=r) for i, r in enumerate(mention)]
    trials += [TrialSpec(t, rewards=PASS) for t in TASKS[1:]]
    return build_job(tmp_path / "candidates", name, trials)


def compare(*args: str) -> tuple[int, str]:
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["compare", *args])
    return result.exit_code, result.output


def test_history_pools_only_runs_that_measured_the_same_thing(tmp_path: Path) -> None:
    connection = open_database(history_db(tmp_path), create=False)
    key = PoolKey(
        "buzz-native-solo-oracle",
        "5f32d5568047fc7b6adb120eeed8774be5e0e7b1f8d50d75f2fb5b761d8d3161",
        1.0,
    )
    digests = {MENTION: "1" * 64}  # user-mention's files changed since
    history = read_history(connection, key, digests, source="results.db")
    assert history.runs == ["night-2", "night-1", "night-0"]
    assert history.left_out == {"another timeout multiplier": 1}
    thread = history.tasks["buzz-native/reply-to-thread"]
    assert (thread.passes, thread.scored, thread.runs) == (3, 3, 3)
    assert thread.metrics == {"reward": [3, 3], "answer_correct": [3, 3]}
    mention = history.tasks[MENTION]
    assert (mention.scored, mention.other_digest_runs) == (0, 3)
    assert history.lines()[0].endswith(
        "(manifest 5f32d5568047, timeout ×1; night-0 … night-2); left out: 1 with another "
        "timeout multiplier"
    )
    assert f"baseline: {MENTION}: 3 runs left out (another task digest)" in history.lines()
    other = read_history(connection, PoolKey(key.condition, "f" * 64, 1.0), {}, source="x")
    assert other.runs == [] and other.left_out == {"another manifest hash": 4}
    assert len(read_history(connection, key, {}, source="x", runs=2).runs) == 2


def test_unchanged_night_against_the_history_exits_0(tmp_path: Path) -> None:
    code, output = compare(
        "--baseline-history", str(history_db(tmp_path)), str(candidate(tmp_path, [PASS]))
    )
    assert code == 0, output
    assert "3 runs of condition buzz-native-solo-oracle pooled" in output
    assert "confirmation:" not in output
    assert output.rstrip().splitlines()[-1].startswith("exit 0")


def test_a_confirmed_regression_fails_the_night_naming_the_task_last(tmp_path: Path) -> None:
    database = history_db(tmp_path)
    tonight = candidate(tmp_path, [FAIL] * 5)  # failed, then 0 of 4 confirmation attempts
    code, output = compare("--baseline-history", str(database), str(tonight), "--alpha", "0.02")
    assert code == 3, output
    assert (
        f"confirmation: {MENTION} (a first attempt failed): 0 of 4 fresh attempts against the baseline's "
        "3 of 3" in output
    )
    last = output.rstrip().splitlines()[-1]
    assert last.startswith("exit 3: confirmed regression (Holm over a family of 2)")
    assert last.endswith(f": {MENTION}"), last
    # the same counts against one run of 1/1: nothing is clear (the history decides)
    one = build_job(tmp_path / "one", "one", [TrialSpec(t, rewards=PASS) for t in TASKS])
    code, output = compare(str(one), str(tonight), "--alpha", "0.02")
    assert code == 0, output


def test_confirmation_uses_its_fresh_attempts_only(tmp_path: Path) -> None:
    """The failed first attempt chose the task; the confirmation attempts passed: noise."""
    tonight = candidate(tmp_path, [FAIL, PASS, PASS, PASS, PASS])
    code, output = compare("--baseline-history", str(history_db(tmp_path)), str(tonight))
    assert code == 0, output
    assert "4 of 4 fresh attempts" in output and "not confirmed" in output


def test_below_the_target_is_a_finding_not_a_regression(tmp_path: Path) -> None:
    """6 of 8 fresh attempts against a history of 6 of 10 (no regression), with a target of 99 %:
    shown; exit 3 only with --fail-below-target."""
    database = tmp_path / "results.db"
    connection = open_database(database, create=True)
    for night in range(10):
        job = build_job(
            tmp_path / "h",
            f"n{night}",
            [
                TrialSpec(t, rewards=PASS if night % 3 or t != "user-mention" else FAIL)
                for t in TASKS
            ],
        )
        add_directory(connection, job)
    connection.close()
    tonight = candidate(tmp_path, [FAIL, PASS, PASS, PASS, FAIL, PASS, PASS, PASS, FAIL])
    args = ["--baseline-history", str(database), str(tonight), "--confirm-target", "0.99"]
    code, output = compare(*args)
    assert code == 0, output
    assert "below the reliability target 99%" in output and "not confirmed" in output
    code, output = compare(*args, "--fail-below-target")
    assert code == 3, output
    assert output.rstrip().splitlines()[-1].endswith(f"below the reliability target 99%: {MENTION}")


def test_history_needs_a_run_directory_and_a_database(tmp_path: Path) -> None:
    tonight = candidate(tmp_path, [PASS])
    code, output = compare("--baseline-history", str(tmp_path / "nope.db"), str(tonight))
    assert code == 1 and "nope.db: no such results database" in output
    code, output = compare("--baseline-history", str(history_db(tmp_path)), "a", "b")
    assert (
        code == 1
        and "compare takes BASELINE CANDIDATE, or --baseline-history DB CANDIDATE" in output
    )
