"""A run as a unit, end to end: Ctrl-C in a terminal prints the
resume command last; that command finishes the whole plan, the job never started included, and
rewrites the report; `resume` takes --buzz-bin-dir, --timeout-multiplier and --report.

The installed `orchestra` script runs the oracle on the session's relay (external stack,
local env), as in test_benchmark_e2e.py.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from agent_trees import SILENT_ACP, fake_agent_tree
from pty_session import run_in_pty
from runs_support import most_at_once

from orchestra.paths import PROJECT_ROOT, StatePaths

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ORCHESTRA = Path(sys.executable).with_name("orchestra")
USER_MENTION = PROJECT_ROOT / "tasks" / "buzz-native" / "user-mention"


def two_layer_dataset(root: Path) -> Path:
    """user-mention (regression, k = 1) and a copy of it in the workflow layer (k = 3): the
    default plan of this dataset is two jobs, as for the whole buzz-native suite."""
    shutil.copytree(USER_MENTION, root / "user-mention")
    workflow = root / "user-mention-workflow"
    shutil.copytree(USER_MENTION, workflow)
    toml = workflow / "task.toml"
    toml.write_text(
        toml.read_text()
        .replace('name = "buzz-native/user-mention"', 'name = "buzz-native/user-mention-workflow"')
        .replace('evaluation_layer = "regression"', 'evaluation_layer = "workflow"')
    )
    verify = workflow / "tests" / "verify.py"  # the evidence names the task by its directory
    verify.write_text(
        verify.read_text().replace(
            'TASK_NAME = "user-mention"', 'TASK_NAME = "user-mention-workflow"'
        )
    )
    return root


def stack_args(relay_url: str, tmp_path: Path, *database_url: str) -> list[str]:
    """External stack; a database URL with a password is not stored with the run (the resume
    command would show it masked), so the first test runs without one."""
    return [
        "--stack", "external", "--relay-url", relay_url,
        *(arg for url in database_url for arg in ("--database-url", url)),
        "--env", "local", "--jobs-dir", str(tmp_path / "jobs"),
        "--state-dir", str(tmp_path / "state"),
    ]  # fmt: skip


def trial_results(job_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(job_dir.glob("*/result.json"))]


def spans(results: list[dict]) -> list[tuple[str, str | None]]:
    return [(result["started_at"], result["finished_at"]) for result in results]


def test_ctrl_c_prints_the_resume_command_that_finishes_the_whole_plan(
    relay_url: str, tmp_path: Path
) -> None:
    dataset = two_layer_dataset(tmp_path / "tasks")
    command = [
        str(ORCHESTRA), "benchmark", "--path", str(dataset), "-n", "3", "--report",
        *stack_args(relay_url, tmp_path),
    ]  # fmt: skip
    jobs = tmp_path / "jobs"

    def regression_agent_started() -> bool:
        return any(jobs.glob("*/*-regression/*/agent/buzz/solo-1.stderr.log"))

    stopped = run_in_pty(
        command, cwd=PROJECT_ROOT, env=os.environ, interrupt_when=regression_agent_started
    )
    assert stopped.exit_code == 130, stopped.output
    (run_dir,) = [p for p in jobs.iterdir() if p.is_dir()]
    shown = run_dir  # outside the working directory: shown absolute
    assert stopped.lines[0] == f"new run {shown}: 2 jobs, 4 trials"
    resume = stopped.lines[-1]
    assert resume == shlex.join([str(ORCHESTRA), "resume", str(shown)]), stopped.output
    assert stopped.lines[-2] == "the plan is not finished; to resume it:"
    assert "trials: 0/4 done (0 scored, 0 errors), 1 cancelled, 0 running, 3 not started" in (
        stopped.lines
    )
    run = json.loads((run_dir / "run.json").read_text())
    regression, workflow = (run_dir / job["job_name"] for job in run["jobs"])
    assert regression.is_dir() and not workflow.exists()  # the workflow job never started
    (cancelled,) = trial_results(regression)
    assert cancelled["status"] == "cancelled"
    assert cancelled["trial_name"] in (run_dir / "report.html").read_text()

    again = subprocess.run(
        [*command, "--dry-run"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 0, again.stderr
    assert f"Run        resuming run {shown}, the most recent unfinished run of this plan" in (
        again.stdout
    )

    finished = subprocess.run(
        shlex.split(resume), cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stdout.startswith(f"resuming run {shown} (started {run['created_at']}): ")
    assert "the plan is not finished" not in finished.stdout + finished.stderr
    results = trial_results(regression) + trial_results(workflow)
    assert sorted((r["task_name"], r["attempt"], r["status"]) for r in results) == [
        ("buzz-native/user-mention", 1, "scored"),
        *(("buzz-native/user-mention-workflow", n, "scored") for n in (1, 2, 3)),
    ]
    assert (regression / ".superseded" / cancelled["trial_name"]).is_dir()
    run = json.loads((run_dir / "run.json").read_text())
    assert [resumed["owed_trials"] for resumed in run["resumes"]] == [4]
    html = (run_dir / "report.html").read_text()
    assert cancelled["trial_name"] not in html  # the superseded trial is no longer linked
    assert all(r["trial_name"] in html for r in results)
    report = json.loads((run_dir / "report.json").read_text())
    assert [job["name"] for job in report["jobs"]] == [regression.name, workflow.name]

    summary = subprocess.run(
        [str(ORCHESTRA), "summarize", "--json", str(run_dir)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    totals = json.loads(summary.stdout)["conditions"][0]["totals"]
    assert (totals["planned"], totals["scored"], totals["not_started"]) == (4, 4, 0)


def test_resume_takes_another_agent_tree_timeout_multiplier_and_report(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    task = tmp_path / "tasks" / USER_MENTION.name
    shutil.copytree(USER_MENTION, task)
    # the multiplier scales the verifier's limit too: keep it at 30 s so only the agent times out
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 30.0", "timeout_sec = 6000.0"))
    crash = fake_agent_tree(tmp_path / "crash", "import sys\nsys.exit(3)\n")
    silent = fake_agent_tree(tmp_path / "silent", SILENT_ACP)
    args = stack_args(relay_url, tmp_path, embedded_pg.new_database_url())
    first = subprocess.run(
        [str(ORCHESTRA), "benchmark", "--path", str(task), "--run-name", "opts",
         "--buzz-bin-dir", str(crash), "-q", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert first.returncode == 3, first.stdout + first.stderr
    job = tmp_path / "jobs" / "opts" / "opts"
    (failed,) = trial_results(job)
    assert failed["status"] == "error" and not (tmp_path / "jobs" / "opts" / "report.html").exists()

    resumed = subprocess.run(
        [str(ORCHESTRA), "resume", str(tmp_path / "jobs" / "opts"), "--buzz-bin-dir", str(silent),
         "--timeout-multiplier", "0.005", "--report", "-q"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    (result,) = trial_results(job)
    assert (result["status"], result["stop_reason"]) == ("scored", "timeout")
    config = json.loads((job / result["trial_name"] / "config.json").read_text())
    assert config["timeouts"] == {"agent_seconds": 1.5, "verifier_seconds": 30.0}
    html = (tmp_path / "jobs" / "opts" / "report.html").read_text()
    assert result["trial_name"] in html and failed["trial_name"] not in html


def test_ctrl_c_while_the_embedded_stack_starts_stops_the_run_with_the_resume_command(
    tmp_path: Path, free_port: int, pg_dir: Path
) -> None:
    """Ctrl-C signals the terminal's whole foreground process group, so the pg_ctl that the
    embedded stack waits on died of it: a pgserver traceback, exit 1 and no resume command. Now the stack comes up, no trial starts and the run stops as any interrupted run."""
    state = pg_dir / "state"  # the embedded PostgreSQL's, outside pytest's temp tree
    jobs = tmp_path / "jobs"
    command = [
        str(ORCHESTRA), "benchmark", "--path", str(USER_MENTION), "--run-name", "early",
        "--stack", "embedded", "--env", "local", "--relay-port", str(free_port),
        "--jobs-dir", str(jobs), "--state-dir", str(state),
    ]  # fmt: skip

    def pg_ctl_waiting() -> bool:  # pgserver's `pg_ctl -w -l log start` opened its log
        return (StatePaths(state).embedded_pg / "log").exists()

    stopped = run_in_pty(command, cwd=PROJECT_ROOT, env=os.environ, interrupt_when=pg_ctl_waiting)
    assert stopped.exit_code == 130, stopped.output
    assert "Traceback" not in stopped.output and "Failed" not in stopped.output, stopped.output
    assert "trials: 0/1 done (0 scored, 0 errors), 0 cancelled, 0 running, 1 not started" in (
        stopped.lines
    )
    assert stopped.lines[-2:] == [
        "the plan is not finished; to resume it:",
        shlex.join([str(ORCHESTRA), "resume", str(jobs / "early")]),
    ], stopped.output
    assert not trial_results(jobs / "early" / "early")


def test_resume_n_1_runs_one_at_a_time_and_keep_errors_keeps_the_errors(
    relay_url: str, tmp_path: Path
) -> None:
    """A run started with -n 3 whose three trials crashed: `resume --keep-errors` owes
    nothing and starts nothing; `resume -n 1` with this package's agent tree reruns them, one
    at a time, where the run's own -n ran three at once."""
    task = tmp_path / "tasks" / USER_MENTION.name
    shutil.copytree(USER_MENTION, task)
    crash = fake_agent_tree(tmp_path / "crash", "import sys\nsys.exit(3)\n")
    first = subprocess.run(
        [str(ORCHESTRA), "benchmark", "--path", str(task), "--run-name", "wide", "-k", "3",
         "-n", "3", "--retries", "0", "--buzz-bin-dir", str(crash), "-q",
         *stack_args(relay_url, tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert first.returncode == 3, first.stdout + first.stderr
    run_dir, job = tmp_path / "jobs" / "wide", tmp_path / "jobs" / "wide" / "wide"
    crashed = trial_results(job)
    assert [r["status"] for r in crashed] == ["error"] * 3
    assert most_at_once(spans(crashed)) > 1  # the run's -n 3 at work

    kept = subprocess.run(
        [str(ORCHESTRA), "resume", str(run_dir), "--keep-errors", "-q"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert kept.returncode == 3, kept.stdout + kept.stderr
    assert f"resuming run {run_dir}" in kept.stdout and "0 of 3 trials owed" in kept.stdout
    assert trial_results(job) == crashed and not (job / ".superseded").exists()

    narrow = subprocess.run(
        [str(ORCHESTRA), "resume", str(run_dir), "-n", "1", "--buzz-bin-dir", str(ORCHESTRA.parent),
         "-q"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert narrow.returncode == 0, narrow.stdout + narrow.stderr
    assert "3 of 3 trials owed" in narrow.stdout
    rerun = trial_results(job)
    assert [r["status"] for r in rerun] == ["scored"] * 3
    assert most_at_once(spans(rerun)) == 1
