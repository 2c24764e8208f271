"""No orphan survives its orchestrator (orchestrator.md §2.5 "Leftovers", §5.4).

`orchestra benchmark` on the embedded stack is killed with SIGKILL while its trial's agent waits
on a model request (the oracle's `slow` fault holds it for a few seconds): within 5 s none of the
processes it had started is left (relay, PostgreSQL and its backends, the sandboxed agent tree),
the trial is still `running`, and `orchestra resume` completes the job: the lost trial becomes
`error` `OrchestratorLost` under `.superseded/`, its re-run scores, and nothing is left running.
`orchestra resume` is given the job directory: it resumes the run the job belongs to.
"""

import json
import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
from orchestra_run import leftovers, orchestra_command, task_copy, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GONE_WITHIN_SECONDS = 5.0
SLOW_ORACLE = {
    "oracle": {"provider": "oracle", "env": {"ORACLE_FAULTS": "slow:1", "ORACLE_SLOW_SECONDS": "4"}}
}


def test_sigkill_leaves_no_process_and_resume_completes_the_job(
    tmp_path: Path, free_port: int
) -> None:
    dataset, state, jobs = tmp_path / "tasks", tmp_path / "state", tmp_path / "jobs"
    task_copy(dataset, "reply-to-thread")
    endpoints = tmp_path / "slow-oracle.json"
    endpoints.write_text(json.dumps(SLOW_ORACLE))
    stack = ("--stack", "embedded", "--relay-port", str(free_port), "--env", "local")
    process = subprocess.Popen(
        orchestra_command(
            *("benchmark", "--path", str(dataset), "-k", "1", "-q", *stack),
            *("--endpoint-config", str(endpoints), "--jobs-dir", str(jobs)),
            *("--state-dir", str(state), "--job-name", "death"),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    job = jobs / "death" / "death"  # the run `--job-name` names, and its one job

    def mid_turn() -> Path | None:
        assert process.poll() is None, process.communicate()
        for log in job.glob("*/agent/buzz/solo-1.events.jsonl"):
            if b'"turn_started"' in log.read_bytes():
                return log.parents[2]
        return None

    try:
        trial = wait_until(mid_turn, 180, "the agent's turn is in flight")
        started = psutil.Process(process.pid).children(recursive=True)
        names = {child.name() for child in started}
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert {"postgres", "bwrap"} <= names and len(started) >= 6, names
    _, alive = psutil.wait_procs(started, timeout=GONE_WITHIN_SECONDS)
    assert alive == [], [(p.pid, p.name()) for p in alive]
    assert leftovers(state, job) == []
    assert json.loads((trial / "result.json").read_text())["status"] == "running"

    resumed = subprocess.run(
        orchestra_command("resume", str(job), *stack, "-q"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    lost = json.loads((job / ".superseded" / trial.name / "result.json").read_text())
    assert (
        lost["status"] == "error" and lost["exception_info"]["exception_type"] == "OrchestratorLost"
    )
    assert lost["exception_info"]["phase"] == "agent"
    [rerun] = [json.loads(p.read_text()) for p in job.glob("*/result.json")]
    assert rerun["status"] == "scored" and rerun["reward"] == 1.0
    assert json.loads((job / "result.json").read_text())["stats"]["n_scored"] == 1
    assert leftovers(state, job) == []
    assert (job / ".lock").read_text() == "" and (
        state / "embedded" / "owner.lock"
    ).read_text() == ""
