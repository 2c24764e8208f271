"""A reference solution that fails (prints `solver exploded` on stderr and exits 7), replayed by
the oracle through the real agent tree, relay and verifier: what it printed and its exit code
are in the trial's ATIF trajectory, which result.json links and report.html shows
(orchestrator.md §7.16)."""

import html
import shutil

import pytest
from e2e_jobs import DATASET, JobRun

from orchestra.agents.trajectory.atif import Trajectory

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASK = "user-mention"
EXPLODING_SOLVE = """#!/usr/bin/env bash
echo "solving for $BUZZ_REQUESTER_NAME"
echo "solver exploded" >&2
exit 7
"""


@pytest.fixture(scope="module")
def exploding_job(run_job, scratch, relay_url: str, embedded_pg) -> JobRun:
    tasks = scratch / "exploding-tasks"
    shutil.copytree(DATASET / TASK, tasks / TASK, ignore=shutil.ignore_patterns("__pycache__"))
    (tasks / TASK / "solution" / "solve.sh").write_text(EXPLODING_SOLVE, encoding="utf-8")
    stack = ["--stack", "external", "--relay-url", relay_url]
    database = ["--database-url", embedded_pg.new_database_url()]
    return run_job(tasks, "exploding-solution", *stack, *database, "--report")


def test_the_failed_solve_run_is_in_the_trial_trajectory(exploding_job: JobRun) -> None:
    assert exploding_job.returncode == 0, exploding_job.output
    result = exploding_job.results[TASK]
    assert (result["status"], result["reward"]) == ("scored", 0.0), exploding_job.output
    (agent_id,) = [agent["agent_id"] for agent in result["buzz"]["agents"]]
    relative = result["trajectories"][agent_id]
    trial = exploding_job.job_dir / result["trial_name"]
    trajectory = Trajectory.model_validate_json((trial / relative).read_bytes())
    runs = [
        (call.function_name, call.arguments["command"], answer.content)
        for step in trajectory.steps
        for call in step.tool_calls or []
        for answer in (step.observation.results if step.observation else [])
        if answer.source_call_id == call.tool_call_id
    ]
    assert runs, trajectory.steps
    for function_name, command, output in runs:  # the oracle tries it up to its cap
        assert function_name.endswith("__shell") and "solve.sh" in command
        assert output.startswith("solving for ") and output.endswith(
            "solver exploded\n[exit code: 7]"
        ), output
    page = (exploding_job.run_dir / "report.html").read_text(encoding="utf-8")
    assert html.escape(runs[0][2]) + "</pre>" in page
