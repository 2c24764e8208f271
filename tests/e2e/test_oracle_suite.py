"""The whole buzz-native suite under the oracle condition, as `just benchmark -k 1` runs it: the
installed `orchestra` script on the embedded stack (its own PostgreSQL and relay), the real agent
tree replaying each reference solution, and the real verifiers. Every task must score 1.0."""

import hashlib
import json
import re
from pathlib import Path

import pytest
from e2e_jobs import JobRun, copy_dataset, dataset_task_names

from orchestra.agents.trajectory.atif import Trajectory

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASK_ROW = re.compile(
    r"^(?P<layer>regression|workflow)\s+(?P<task>buzz-native/\S+)\s+(?P<trials>\d+)\s+"
    r"(?P<scored>\d+)\s+(?P<errors>\d+)\s+(?P<cancelled>\d+)\s+(?P<not_started>\d+)\s+"
    r"(?P<pass_rate>\d+\.\d\d)\s+(?P<interval>\[\d\.\d\d, \d\.\d\d\])\s+"
    r"(?P<pass_rate_all>\d+\.\d\d)\s+"
    r"(?P<pass_at_k>\d+\.\d\d \(k=\d+\))\s+(?P<pass_hat_k>\d+\.\d\d \(k=\d+\))\s+"
    r"(?P<failing>\S+)",
    re.MULTILINE,
)
CONDITION_ROW = re.compile(
    r"^all\s+\(condition\)\s+(?P<trials>\d+)\s+(?P<scored>\d+)\s+(?P<errors>\d+)\s+"
    r"(?P<cancelled>\d+)\s+(?P<not_started>\d+)\s+(?P<pass_rate>\d+\.\d\d)\s+"
    r"(?P<interval>\[\d\.\d\d, \d\.\d\d\])\s+(?P<pass_rate_all>\d+\.\d\d)\s",
    re.MULTILINE,
)


@pytest.fixture(scope="module")
def oracle_job(run_job, scratch: Path, embedded_stack_args: list[str]) -> JobRun:
    tasks = copy_dataset(scratch / "tasks" / "buzz-native")
    return run_job(tasks, "oracle-suite", *embedded_stack_args)


def test_every_task_scores_one_in_its_trial_result(oracle_job: JobRun, record_property) -> None:
    record_property("job_wall_seconds", round(oracle_job.wall_seconds, 1))
    assert oracle_job.returncode == 0, oracle_job.output
    outcomes = {name: (r["status"], r["reward"]) for name, r in oracle_job.results.items()}
    assert outcomes == {name: ("scored", 1.0) for name in dataset_task_names()}, oracle_job.output
    failing = {
        name: sorted(metric for metric, value in r["rewards"].items() if value != 1.0)
        for name, r in oracle_job.results.items()
    }
    assert failing == {name: [] for name in dataset_task_names()}
    for name, result in oracle_job.results.items():
        assert result["buzz"]["evidence_exported"] is True, name
        assert result["accounting"] == "event_log", name


def test_every_document_round_trips_through_its_model(
    oracle_job: JobRun, document_round_trip
) -> None:
    round_trip = document_round_trip(oracle_job.job_dir)
    assert round_trip.checked == 2 + 2 * len(dataset_task_names())
    assert round_trip.diffs == {}


def test_every_agent_left_an_atif_trajectory_of_its_solve_run(oracle_job: JobRun) -> None:
    """Parsed back through the strict model; checked against the event log and the accounting."""
    assert oracle_job.results, oracle_job.output
    for name, result in oracle_job.results.items():
        trial = oracle_job.job_dir / result["trial_name"]
        agents = sorted(agent["agent_id"] for agent in result["buzz"]["agents"])
        assert sorted(result["trajectories"]) == agents, name
        for agent_id in agents:
            relative = result["trajectories"][agent_id]
            assert relative == f"agent/buzz/{agent_id}.trajectory.json"
            trajectory = Trajectory.model_validate_json((trial / relative).read_bytes())
            steps = trajectory.steps
            assert [step.step_id for step in steps] == list(range(1, len(steps) + 1)), name
            assert steps[0].source == "system" and steps[1].source == "user", name
            assert "[Base]" in steps[0].message and "[System]" in steps[0].message, name
            calls = [(step, call) for step in steps for call in step.tool_calls or []]
            for step, call in calls:  # every call answered by exactly one result, in its step
                assert step.observation is not None, name
                answers = [
                    r for r in step.observation.results if r.source_call_id == call.tool_call_id
                ]
                assert len(answers) == 1, (name, call)
            solves = [
                (call, step)
                for step, call in calls
                if call.tool_call_id.startswith(f"oracle-solve-{agent_id}-")
            ]
            assert solves, name
            call, step = solves[-1]
            assert call.function_name.endswith("__shell")
            assert "bash " in call.arguments["command"] and "solve.sh" in call.arguments["command"]
            (answer,) = step.observation.results  # type: ignore[union-attr]
            assert answer.content.endswith("[exit code: 0]"), (name, answer.content[-300:])
            # each user step is the exact prompt buzz-acp sent (its event log has the digest)
            events = [
                json.loads(line)
                for line in (trial / "agent" / "buzz" / f"{agent_id}.events.jsonl").open()
            ]
            sent = {e["prompt_sha256"] for e in events if "prompt_sha256" in e}
            prompts = [s.message for s in steps if s.source == "user"]
            assert {hashlib.sha256(p.encode()).hexdigest() for p in prompts} == sent, name
            # the steps' tokens are the accounting's (the oracle reports usage per response)
            tokens = result["tokens"]["per_agent"][agent_id]
            totals = trajectory.final_metrics
            assert (totals.total_prompt_tokens, totals.total_completion_tokens) == (
                tokens["input"],
                tokens["output"],
            ), name
            assert totals.total_cost_usd == pytest.approx(tokens["cost_usd"])


def test_printed_summary_reports_every_task_passing(oracle_job: JobRun) -> None:
    assert "oracle condition" in oracle_job.stdout, oracle_job.output
    rows = {m["task"]: m.groupdict() for m in TASK_ROW.finditer(oracle_job.stdout)}
    assert sorted(rows) == [f"buzz-native/{name}" for name in dataset_task_names()], (
        oracle_job.stdout
    )
    for task, row in rows.items():
        layer = oracle_job.results[task.removeprefix("buzz-native/")]["layer"]
        assert row == {
            "layer": layer, "task": task, "trials": "1", "scored": "1", "errors": "0",
            "cancelled": "0", "not_started": "0", "pass_rate": "1.00",
            "interval": "[0.21, 1.00]", "pass_rate_all": "1.00",  # Wilson, 1 of 1 attempt
            "pass_at_k": "1.00 (k=1)", "pass_hat_k": "1.00 (k=1)", "failing": "-",
        }  # fmt: skip
    (condition,) = [m.groupdict() for m in CONDITION_ROW.finditer(oracle_job.stdout)]
    assert condition == {
        "trials": "10", "scored": "10", "errors": "0", "cancelled": "0", "not_started": "0",
        "pass_rate": "1.00", "interval": "[0.66, 1.00]",  # clustered: Wilson, 10 tasks, t(9)
        "pass_rate_all": "1.00",
    }  # fmt: skip
