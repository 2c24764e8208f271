"""The embedded stack watched and healed (orchestrator.md §5.1 "Health", §12).

One real job of three oracle trials, one at a time: the first two stall mid-turn (their solution
waits in the agent's shell); while the first stalls the relay is killed with -9, while the second
stalls PostgreSQL is. Each stalled trial ends `error` `StackUnavailable` within 15 s of its
fault, the stack is restarted, the next trial runs through setup and agents normally (the second
gets as far as its stall, the third scores), and each fault costs less than 30 s before the
next trial starts.
"""

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from orchestra_run import orchestra_command, task_copy, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

STALL = """\
#!/usr/bin/env bash
touch "$TMPDIR/stalled"
exec sleep 600
"""
TASKS = ("multiline-message", "reply-to-thread", "user-mention")  # plan order: by name
FAULT_DEADLINE_SECONDS = 15.0
ADDED_TIME_SECONDS = 30.0


def seconds(timestamp: str) -> float:
    return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def where_it_is(job: Path, process: subprocess.Popen[str]) -> str:
    """The job's log, each trial's log and the command's stderr (it is killed): what a
    failure in CI shows of where the job stood."""
    parts = [f"job.log:\n{(job / 'job.log').read_text() if (job / 'job.log').exists() else '-'}"]
    for log in sorted(job.glob("*__*/trial.log")):
        parts.append(f"{log.parent.name}/trial.log:\n{log.read_text()[-4000:]}")
    process.kill()
    _, stderr = process.communicate()
    parts.append(f"stderr:\n{stderr[-4000:]}")
    return "\n".join(parts)


def kill_when_stalled(
    job: Path, task: str, pid_of: Callable[[], int], process: subprocess.Popen[str]
) -> tuple[float, Path]:
    """Wait for `task`'s trial to stall mid-turn, then kill -9 the stack process; returns when
    and the trial directory."""

    def stalled() -> Path | None:
        assert process.poll() is None, process.communicate()
        for marker in job.glob(f"{task}__*/sandbox/tmp/stalled"):
            return marker.parents[2]
        return None

    try:
        trial = wait_until(stalled, 180, f"{task} stalls mid-turn")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{where_it_is(job, process)}") from None
    os.kill(pid_of(), signal.SIGKILL)
    return time.time(), trial


def test_relay_and_postgres_deaths_fail_the_trial_in_flight_and_heal(
    tmp_path: Path, free_port: int
) -> None:
    dataset = tmp_path / "tasks"
    task_copy(dataset, "multiline-message", solve=STALL)
    task_copy(dataset, "reply-to-thread", solve=STALL)
    task_copy(dataset, "user-mention")
    state, jobs = tmp_path / "state", tmp_path / "jobs"
    job = jobs / "faults" / "faults"  # the run `--job-name` names, and its one job
    process = subprocess.Popen(
        orchestra_command(
            # no rerun of a StackUnavailable slot (--retries): a stalled task
            # would stall again, and what is measured here is the fault's own cost
            *("benchmark", "--path", str(dataset), "-k", "1", "-n", "1", "-q", "--retries", "0"),
            *("--stack", "embedded", "--relay-port", str(free_port), "--env", "local"),
            *("--jobs-dir", str(jobs), "--state-dir", str(state), "--job-name", "faults"),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        embedded = state / "embedded"
        relay_killed, first = kill_when_stalled(
            job, "multiline-message", lambda: int((embedded / "relay.pid").read_text()), process
        )
        postgres_killed, second = kill_when_stalled(
            job,
            "reply-to-thread",
            lambda: int((embedded / "pg" / "postmaster.pid").read_text().split()[0]),
            process,
        )
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 3, stdout + stderr  # two trials are errors
    results = {
        name: json.loads(path.read_text())
        for name in TASKS
        for path in job.glob(f"{name}__*/result.json")
    }
    for trial, killed in ((first, relay_killed), (second, postgres_killed)):
        result = results[trial.name.split("__")[0]]
        info = result["exception_info"]
        assert result["status"] == "error" and info["exception_type"] == "StackUnavailable"
        assert info["phase"] == "agent", info
        assert seconds(result["finished_at"]) - killed < FAULT_DEADLINE_SECONDS, result
    assert "buzz-relay (pid" in results["multiline-message"]["exception_info"]["exception_message"]
    assert "PostgreSQL (pid" in results["reply-to-thread"]["exception_info"]["exception_message"]
    # the next trial after each fault started within 30 s and ran normally
    assert seconds(results["reply-to-thread"]["started_at"]) - relay_killed < ADDED_TIME_SECONDS
    assert seconds(results["user-mention"]["started_at"]) - postgres_killed < ADDED_TIME_SECONDS
    last = results["user-mention"]
    assert last["status"] == "scored" and last["reward"] == 1.0, last
    log = (job / "job.log").read_text()
    assert log.count("stack restarted in") == 2, log
    assert "stack unavailable" in stderr
    assert (
        not (embedded / "relay.pid").exists() and not (embedded / "pg" / "postmaster.pid").exists()
    )
