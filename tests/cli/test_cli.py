"""The command line: dry run, validation errors and exit codes (orchestrator.md §2.2-§2.4)."""

import subprocess
import sys
from pathlib import Path

import pytest
from runs_support import DATASET, run_request, start_run
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.paths import PROJECT_ROOT


@pytest.fixture(autouse=True)
def repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT_ROOT)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_default_dry_run_plans_two_jobs_and_writes_nothing(tmp_path: Path) -> None:
    code, out, _ = invoke(
        "benchmark", "--dry-run", "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "plan",
        "--stack", "embedded", "--env", "local",
    )  # fmt: skip
    assert code == 0
    assert "Job 1/2  plan-regression  layer=regression  k=1  6 tasks × 1 = 6 trials" in out
    assert "Job 2/2  plan-workflow  layer=workflow  k=3  4 tasks × 3 = 12 trials" in out
    assert "ORACLE condition" in out
    assert "Stack      embedded" in out and "Env        local" in out
    assert not (tmp_path / "jobs").exists()


def test_dry_run_counts_in_the_right_number(tmp_path: Path) -> None:
    code, out, _ = invoke(
        "benchmark", "--dry-run", "-p", "tasks/buzz-native/user-mention", "--stack", "embedded",
        "--env", "local", "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "one",
    )  # fmt: skip
    assert code == 0, out
    assert f"Run        new run {tmp_path / 'jobs' / 'one'}: 1 job, 1 trial" in out
    assert "Job 1/1  one  layer=regression  k=1  1 task × 1 = 1 trial" in out
    assert "Total: 1 job, 1 trial" in out
    assert not (tmp_path / "jobs").exists()


def test_dry_run_names_the_unfinished_run_a_rerun_resumes(tmp_path: Path) -> None:
    task = DATASET / "user-mention"
    record = start_run(tmp_path / "jobs", run_request(task, dataset=task))
    code, out, _ = invoke(
        "benchmark", "--dry-run", "-p", "tasks/buzz-native/user-mention", "--stack", "embedded",
        "--env", "local", "--jobs-dir", str(tmp_path / "jobs"),
    )  # fmt: skip
    assert code == 0, out
    assert (
        f"Run        resuming run {tmp_path / 'jobs' / record.run_name}, the most recent "
        f"unfinished run of this plan (started {record.created_at}): 1 of 1 trial owed "
        "(--new-run starts a new run instead)"
    ) in out
    code, out, _ = invoke(
        "benchmark", "--dry-run", "-p", "tasks/buzz-native/user-mention", "--stack", "embedded",
        "--env", "local", "--jobs-dir", str(tmp_path / "jobs"), "--new-run",
    )  # fmt: skip
    assert code == 0 and "Run        new run " in out


def test_dry_run_makes_the_checks_the_real_run_makes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each of these said "valid" and exited 0 before."""
    start_run(tmp_path / "jobs", run_request(DATASET / "user-mention"), run_name="taken")
    common = ["--stack", "embedded", "--env", "local", "--state-dir", str(tmp_path / "s")]
    taken = ["-p", "tasks/buzz-native/user-mention", "-k", "2", "--run-name", "taken",
             "--jobs-dir", str(tmp_path / "jobs")]  # fmt: skip
    spaced = ["-p", "tasks/buzz-native/user-mention", "--jobs-dir", str(tmp_path / "my jobs")]
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    keyless = ["-p", "tasks/buzz-native/user-mention", "--jobs-dir", str(tmp_path / "jobs"),
               "--manifest", "manifests/buzz-native-solo-luna.yaml",
               "--endpoint-config", "endpoints/openai-live.json"]  # fmt: skip
    for args, message in (
        (taken, "error: run taken exists with a different configuration (attempts); "
                "choose another --run-name"),
        (spaced, "contains whitespace or shell metacharacters"),
        (keyless, "error: OPENAI_COMPAT_API_KEY is not set (endpoint gpt-5.6-luna)"),
    ):  # fmt: skip
        dry_code, _, dry_err = invoke("benchmark", "--dry-run", *common, *args)
        assert dry_code == 1 and message in dry_err, (args, dry_err)
        hint = "note: --allow-missing-keys prints the plan without the keys"
        assert (hint in dry_err) == (args is keyless), dry_err
        real_code, _, real_err = invoke("benchmark", *common, *args)
        assert real_code in (1, 2) and message in real_err, (args, real_err)
    assert not (tmp_path / "my jobs").exists() and not (tmp_path / "s").exists()
    code, out, err = invoke("benchmark", "--dry-run", *common, *keyless, "--allow-missing-keys")
    assert code == 0, err
    assert "API key $OPENAI_COMPAT_API_KEY NOT SET" in out
    assert "warning: $OPENAI_COMPAT_API_KEY is not set (endpoint gpt-5.6-luna)" in out
    code, _, err = invoke("benchmark", *common, *keyless, "--allow-missing-keys")
    assert code == 1 and "--allow-missing-keys is only valid with --dry-run" in err


def test_layer_and_attempts_give_one_job() -> None:
    code, out, _ = invoke(
        "benchmark", "--dry-run", "--layer", "workflow", "-k", "2", "--stack", "embedded",
        "--env", "local",
    )  # fmt: skip
    assert code == 0 and "4 tasks × 2 = 8 trials" in out and "Job 2/" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--path", "/does/not/exist"], "error: /does/not/exist: does not exist"),
        (["-x", "*"], "error: no tasks selected"),
        (["--dataset", "org/name@1"], "registry datasets are not supported"),
        (["--stack", "embedded", "--env", "docker"], "--stack embedded requires --env local"),
        (["--stack", "external"], "--stack external requires --relay-url"),
        (
            ["--manifest", "manifests/buzz-native-solo-luna.yaml"],
            'endpoint "gpt-5.6-luna" is not in endpoints/oracle.json '
            "(try --endpoint-config endpoints/openai-live.json)",
        ),
        (["--job-name", "bad name"], "must match"),
    ],
)
def test_validation_errors_exit_1(args: list[str], message: str) -> None:
    code, out, err = invoke("benchmark", "--dry-run", *args)
    assert code == 1
    assert message in err
    assert "Traceback" not in out + err


def test_missing_api_key_is_a_preflight_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = invoke(
        "benchmark",
        "--manifest",
        "manifests/buzz-native-solo-luna.yaml",
        "--endpoint-config",
        "endpoints/openai-live.json",
        "--stack",
        "embedded",
        "--env",
        "local",
        "--state-dir",
        str(tmp_path / "s"),
        "--jobs-dir",
        str(tmp_path / "j"),
    )
    assert code == 2
    assert "error: OPENAI_COMPAT_API_KEY is not set (endpoint gpt-5.6-luna)" in err
    assert not (tmp_path / "j").exists()


def test_jobs_dir_with_shell_metacharacters_is_refused(tmp_path: Path) -> None:
    code, _, err = invoke(
        "benchmark", "--jobs-dir", str(tmp_path / "my jobs"), "--state-dir", str(tmp_path / "s"),
        "--stack", "embedded", "--env", "local",
    )  # fmt: skip
    assert code == 2 and "shell metacharacters" in err


def test_summarize_rejects_what_is_neither_a_run_nor_a_job(tmp_path: Path) -> None:
    code, _, err = invoke("summarize", str(tmp_path))
    assert code == 1 and "not a run or job directory (no run.json or config.json)" in err


@pytest.mark.parametrize("command", ["resume", "summarize", "compare"])
def test_a_directory_of_runs_and_jobs_lists_them(tmp_path: Path, command: str) -> None:
    for name in ("job-a", "job-b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    (tmp_path / "run-c").mkdir()
    (tmp_path / "run-c" / "run.json").write_text("{}")
    (tmp_path / "notes").mkdir()
    args = [str(tmp_path), str(tmp_path)] if command == "compare" else [str(tmp_path)]
    code, _, err = invoke(command, *args)
    assert code == 1
    assert err.count("\n") == 1
    assert "a directory of 1 run and 2 jobs, not a run or job: job-a, job-b, run-c" in err
    assert f"(name one, e.g. {tmp_path / 'run-c'})" in err


def test_a_missing_run_directory_says_so(tmp_path: Path) -> None:
    code, _, err = invoke("resume", str(tmp_path / "nope"))
    assert code == 1 and err == f"error: {tmp_path / 'nope'}: no such run or job directory\n"


def test_task_check_of_a_missing_directory_names_it(tmp_path: Path) -> None:
    run = run_main("task", "check", str(tmp_path / "nope"))
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert f"'{tmp_path / 'nope'}' does not exist" in run.stderr, run.stderr


def test_stack_status_without_state(tmp_path: Path) -> None:
    code, _, err = invoke("stack", "status", "--state-dir", str(tmp_path / "none"))
    assert code == 1 and "missing" in err


def run_main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from orchestra.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["benchmark", "--relay-port", "0"],
        ["benchmark", "--layer", "x"],
        ["benchmark", "--settle-ms", "5001"],
        ["resume", "jobs/x", "--settle-ms", "-1"],
        ["bogus"],
    ],
)
def test_usage_errors_exit_1_without_traceback(args: list[str]) -> None:
    run = run_main(*args)
    assert run.returncode == 1
    assert "Traceback" not in run.stdout + run.stderr


@pytest.mark.parametrize("args", [[], ["stack"]])
def test_a_bare_command_prints_its_help_and_succeeds(args: list[str]) -> None:
    run = run_main(*args)
    assert run.returncode == 0, run.stderr
    assert "Usage: " in run.stdout and "Commands:" in run.stdout


def test_version() -> None:
    run = run_main("--version")
    assert run.returncode == 0 and run.stdout.startswith("orchestra ")


def test_unreachable_external_relay_is_a_stack_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, free_port: int
) -> None:
    monkeypatch.setattr("orchestra.stack.readiness.READINESS_TIMEOUT_SECONDS", 0.5)
    code, _, err = invoke(
        "benchmark",
        "--stack",
        "external",
        "--relay-url",
        f"ws://127.0.0.1:{free_port}",
        "--env",
        "local",
        "--state-dir",
        str(tmp_path / "s"),
        "--jobs-dir",
        str(tmp_path / "j"),
        "-p",
        "tasks/buzz-native/user-mention",
    )
    assert code == 2
    assert f"error: relay at http://127.0.0.1:{free_port} not ready after 0.5 s" in err
    assert not list((tmp_path / "j").glob("*/*/result.json"))
