"""Harbor-format tasks end to end in the local env (docs/decisions.md D46, D64): the fixture tasks
of tests/fixtures/harbor-tasks replayed by the oracle through the real agent trees in the
bubblewrap sandbox, solo and as the oracle team (the lead delegates, a worker runs the
solution), graded by their tests/test.sh on the files the agents left, then exported with
`orchestra export harbor` and loaded by the real `harbor` package (tests/harbor_check.py).

The solo and the team run are started together (each mostly waits on its agents)."""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from e2e_jobs import JobRun
from harbor_real import check_harbor_jobs
from harbor_support import EXPECTED_REWARDS, harbor_dataset, harbor_problems
from inspect_ai.log import read_eval_log
from typer.testing import CliRunner

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.cli.main import app
from orchestra.config.harbor_task import harbor_checksum
from orchestra.paths import PROJECT_ROOT
from orchestra.trial.env.sandbox import sandbox_support

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TEAM_MANIFEST = PROJECT_ROOT / "manifests" / "buzz-native-team-oracle.yaml"


@pytest.fixture(scope="module")
def harbor_jobs(run_job, scratch: Path, relay_url: str, embedded_pg) -> dict[str, JobRun]:
    if sandbox_support().program is None:
        pytest.skip(
            f"Harbor tasks run locally only in the bubblewrap sandbox: {sandbox_support().problem}"
        )
    tasks = harbor_dataset(scratch / "harbor-tasks")
    stack = ["--stack", "external", "--relay-url", relay_url]
    runs = {"solo": [], "team": ["--manifest", str(TEAM_MANIFEST)]}
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {
            name: pool.submit(
                run_job,
                tasks,
                f"harbor-{name}",
                *stack,
                "--database-url",
                embedded_pg.new_database_url(),
                *extra,
            )
            for name, extra in runs.items()
        }
        return {name: future.result() for name, future in futures.items()}


@pytest.fixture(scope="module")
def harbor_job(harbor_jobs: dict[str, JobRun]) -> JobRun:
    return harbor_jobs["solo"]


@pytest.fixture(scope="module")
def team_job(harbor_jobs: dict[str, JobRun]) -> JobRun:
    return harbor_jobs["team"]


def solve_commands(trial: Path, result: dict, agent_id: str) -> list[str]:
    """The shell commands the agent's oracle issued, from its ATIF trajectory."""
    relative = result["trajectories"].get(agent_id)
    if relative is None:
        return []
    steps = Trajectory.model_validate_json((trial / relative).read_bytes()).steps
    return [call.arguments["command"] for step in steps for call in step.tool_calls or []]


def test_reference_solutions_score_1_and_the_wrong_one_0(harbor_job: JobRun) -> None:
    assert harbor_job.returncode == 0, harbor_job.output
    assert harbor_problems(harbor_job.results) == [], harbor_job.output


def test_the_user_posts_the_instruction_and_the_orchestrator_runs_solve_sh(
    harbor_job: JobRun,
) -> None:
    for name, result in harbor_job.results.items():
        trial = harbor_job.job_dir / result["trial_name"]
        (agent,) = result["buzz"]["agents"]
        evidence = json.loads((trial / "agent" / "buzz" / "buzz-evidence.json").read_text())
        task_message = evidence["messages"][0]
        assert task_message["id"] == result["buzz"]["task_event_id"], name
        assert task_message["content"].startswith(f"@{agent['agent_id']} "), name
        assert task_message["mentioned_pubkeys"] == [agent["pubkey"]], name
        commands = solve_commands(trial, result, agent["agent_id"])
        assert len(commands) == 1 and commands[0].endswith("harbor-solve.sh"), (name, commands)


def test_the_grade_is_the_sandbox_state_the_agents_left(harbor_job: JobRun) -> None:
    """fix-python-bug's solution fixed /app/calc.py inside the sandbox; the trial keeps the
    file where the local env maps /app, and the verifier's record of its inputs has /tests."""
    result = harbor_job.results["fix-python-bug"]
    trial = harbor_job.job_dir / result["trial_name"]
    assert "range(1, n + 1)" in (trial / "sandbox" / "app" / "calc.py").read_text()
    assert (trial / "verifier-inputs" / "tests" / "test_calc.py").is_file()
    assert result["sandbox"] == "bwrap"


def test_the_evidence_names_a_written_file_at_its_container_path(harbor_job: JobRun) -> None:
    """hello-file's solution wrote /app/hello.txt: the evidence's agent_files row has the path
    the agents saw and the bytes the sandbox holds."""
    result = harbor_job.results["hello-file"]
    trial = harbor_job.job_dir / result["trial_name"]
    evidence = json.loads((trial / "agent" / "buzz" / "buzz-evidence.json").read_text())
    rows = {row["path"]: row["content"] for row in evidence["agent_files"]}
    assert rows.get("/app/hello.txt") == "Hello, Harbor!\n", sorted(rows)


def test_the_export_round_trips_with_harbor_s_task_checksum(
    harbor_job: JobRun, scratch: Path
) -> None:
    out = scratch / "harbor-export"
    exported = CliRunner().invoke(app, ["export", "harbor", str(harbor_job.run_dir), str(out)])
    assert exported.exit_code == 0, exported.output
    job_out = out / harbor_job.job_dir.name
    job = check_harbor_jobs(out)["jobs"][harbor_job.job_dir.name]
    rewards = {}
    for name, result in harbor_job.results.items():
        trial_out = job_out / result["trial_name"]
        trial = job["trials"][result["trial_name"]]["result"]
        assert trial["task_checksum"] == harbor_checksum(Path(trial["task_id"]["path"])), name
        assert trial["verifier_result"] is not None and trial["exception_info"] is None
        rewards[name] = trial["verifier_result"]["rewards"]
        assert (trial_out / "agent" / "trajectory.json").is_file()
        assert {p.name for p in (trial_out / "verifier").iterdir()} >= {"test-stdout.txt"}
    assert rewards == EXPECTED_REWARDS
    stats = job["result"]["stats"]
    assert (job["result"]["n_total_trials"], stats["n_completed_trials"]) == (3, 3)
    assert stats["n_errored_trials"] == 0


def test_a_team_scores_the_same_with_the_worker_running_solve_sh(team_job: JobRun) -> None:
    """The lead delegates by mention, worker-1 runs harbor-solve.sh and calls back, and the
    lead's `DONE:` ends the trial; the grade is still the sandbox the worker changed."""
    assert team_job.returncode == 0, team_job.output
    assert harbor_problems(team_job.results) == [], team_job.output
    for name, result in team_job.results.items():
        trial = team_job.job_dir / result["trial_name"]
        assert result["stop_reason"] == "done_message", name
        evidence = json.loads((trial / "agent" / "buzz" / "buzz-evidence.json").read_text())
        by_id = {message["id"]: message for message in evidence["messages"]}
        done = by_id[result["buzz"]["completion_message_id"]]
        assert (done["author"], done["content"][:5]) == ("lead-1", "DONE:"), name
        assert [m["author"] for m in evidence["messages"]][:2] == ["user", "lead-1"], name
        lead = solve_commands(trial, result, "lead-1")
        assert not any("harbor-solve" in command for command in lead), (name, lead)
        worker = [c for c in solve_commands(trial, result, "worker-1") if "harbor-solve" in c]
        assert len(worker) == 1, (name, worker)


def test_a_team_run_exports_the_teammates_trajectories_beside_the_lead_s(
    team_job: JobRun, scratch: Path
) -> None:
    out = scratch / "harbor-team-export"
    exported = CliRunner().invoke(app, ["export", "harbor", str(team_job.run_dir), str(out)])
    assert exported.exit_code == 0, exported.output
    job = check_harbor_jobs(out)["jobs"][team_job.job_dir.name]
    for name, result in team_job.results.items():
        agent_out = out / team_job.job_dir.name / result["trial_name"] / "agent"
        trial = job["trials"][result["trial_name"]]["result"]
        assert trial["verifier_result"]["rewards"] == EXPECTED_REWARDS[name]
        lead = Trajectory.model_validate_json((agent_out / "trajectory.json").read_bytes())
        assert lead.steps, name
        sides = sorted(p.name for p in (agent_out / "trajectories").iterdir())
        assert sides == sorted(f"{a}.json" for a in result["trajectories"] if a != "lead-1")
        assert "worker-1.json" in sides, name
        for side in sides:
            Trajectory.model_validate_json((agent_out / "trajectories" / side).read_bytes())


def test_a_team_run_s_inspect_samples_hold_every_agent_s_messages_lead_first(
    team_job: JobRun, scratch: Path
) -> None:
    out = scratch / "inspect-team"
    exported = CliRunner().invoke(app, ["export", "inspect", str(team_job.run_dir), str(out)])
    assert exported.exit_code == 0, exported.output
    (log_file,) = out.iterdir()
    samples = read_eval_log(str(log_file)).samples or []
    task_of = {result["trial_name"]: name for name, result in team_job.results.items()}
    assert sorted(sample.metadata["trial_name"] for sample in samples) == sorted(task_of)
    for sample in samples:
        authors = [(message.metadata or {}).get("agent_id") for message in sample.messages]
        assert authors[0] == "lead-1" and "worker-1" in authors, sample.id
        assert set(sample.role_usage) >= {"lead-1", "worker-1"}, sample.id
        assert sample.scores is not None
        expected = EXPECTED_REWARDS[task_of[sample.metadata["trial_name"]]]
        assert {key: score.value for key, score in sample.scores.items()} == expected
