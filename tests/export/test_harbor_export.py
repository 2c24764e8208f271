"""`orchestra export harbor` on a real oracle run in the local env: every
document it writes is loaded by the real `harbor` package (its models, its viewer's scanner and
API: tests/harbor_check.py), every trial is there with its rewards, tokens, timings, trajectory
and verifier files, an error trial carries `exception_info`, the environment is ours in Harbor's
custom-environment form, and a run and a job directory are both accepted. The same check on a
recorded docker-env run is in test_harbor_docker_env.py, on a team run in
tests/e2e/test_harbor_tasks.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e.e2e_jobs import JobRun
from export_runs import ERROR_MESSAGE, ERROR_TRIAL, TASKS
from harbor_real import check_harbor_jobs
from typer.testing import CliRunner

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.cli.main import app
from orchestra.documents.enums import TrialStatus
from orchestra.documents.job import JobConfig
from orchestra.documents.trial import TrialResult

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@dataclass(frozen=True)
class ExportedRun:
    run: JobRun
    out: Path
    #: what the real harbor package made of `out` (tests/harbor_check.py)
    harbor: dict[str, Any]

    @property
    def job_out(self) -> Path:
        return self.out / self.run.job_dir.name

    @property
    def job(self) -> dict[str, Any]:
        job: dict[str, Any] = self.harbor["jobs"][self.run.job_dir.name]
        return job

    def trial_results(self) -> dict[str, dict[str, Any]]:
        return {name: trial["result"] for name, trial in self.job["trials"].items()}


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["export", "harbor", *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def exported(oracle_run: JobRun, scratch: Path) -> ExportedRun:
    out = scratch / "harbor-jobs"
    code, output = invoke(str(oracle_run.run_dir), str(out))
    assert code == 0, output
    assert output == f"wrote {out / oracle_run.job_dir.name} (3 trials)\n"
    return ExportedRun(oracle_run, out, check_harbor_jobs(out))


def harbor_time(value: str | None) -> str | None:
    """Harbor's dump of a datetime (`+00:00` or `Z`) in our §10.1 form."""
    return value.replace("+00:00", "Z") if value is not None else None


def test_every_trial_round_trips_with_its_rewards_tokens_and_timings(
    exported: ExportedRun,
) -> None:
    ours = {p.name: TrialResult.load(p / "result.json") for p in exported.run.job_dir.iterdir()
            if (p / "result.json").is_file() and p.is_dir()}  # fmt: skip
    theirs = exported.trial_results()
    assert sorted(theirs) == sorted(ours) and len(theirs) == 3
    for name, trial in theirs.items():
        our = ours[name]
        assert (trial["id"], trial["trial_name"], trial["task_name"]) == (
            our.trial_id, our.trial_name, our.task_name
        )  # fmt: skip
        assert trial["trial_uri"] == (exported.job_out / name).absolute().as_uri()
        assert trial["source"] == "tasks"  # the dataset directory the run's tasks were in
        assert trial["agent_info"]["name"] == "buzz-orchestra"
        assert trial["agent_info"]["model_info"] == {"name": "oracle-v1", "provider": "oracle"}
        assert harbor_time(trial["started_at"]) == our.started_at
        assert trial["environment_setup"] is not None and trial["agent_execution"] is not None
        if our.status is TrialStatus.SCORED:
            assert trial["exception_info"] is None and trial["reward_valid"] is True
            assert trial["verifier_result"]["rewards"] == our.rewards
            assert trial["verifier_result"]["rewards"]["reward"] == 1.0
            assert trial["verifier"] is not None
            assert our.tokens is not None
            context = trial["agent_result"]
            assert (
                context["n_input_tokens"],
                context["n_cache_tokens"],
                context["n_output_tokens"],
                context["cost_usd"],
            ) == (our.tokens.input, our.tokens.cached_input, our.tokens.output, our.cost_usd)
            assert (exported.job_out / name / "verifier" / "reward.json").read_bytes() == (
                exported.run.job_dir / name / "verifier" / "reward.json"
            ).read_bytes()
        assert exported.job["trials"][name]["config"] == trial["config"]
        assert trial["config"]["trial_name"] == name


def test_the_environment_is_ours_in_harbor_s_custom_environment_form(
    exported: ExportedRun,
) -> None:
    """Never Harbor's `docker` for a local run: no `type`, our class as `import_path`."""
    expected = {"type": None, "import_path": "orchestra.trial.env.local:LocalEnvironment",
                "kwargs": {"buzz_orchestra_env": "local"}}  # fmt: skip
    environments = [exported.job["config"]["environment"]] + [
        trial["config"]["environment"] for trial in exported.job["trials"].values()
    ]
    for environment in environments:
        assert {key: environment[key] for key in expected} == expected
    (summary,) = exported.harbor["viewer"]["jobs"]
    assert summary["environment_type"] is None


def test_an_error_trial_carries_its_exception_info(exported: ExportedRun) -> None:
    trial = exported.trial_results()[ERROR_TRIAL]
    assert trial["verifier_result"] is None and trial["reward_valid"] is False
    info = trial["exception_info"]
    assert info["exception_type"] == "AgentProcessExited"
    assert info["exception_message"] == ERROR_MESSAGE
    assert info["occurred_at"].endswith(("Z", "+00:00"))


def test_the_job_documents_count_every_trial(exported: ExportedRun) -> None:
    ours = JobConfig.load(exported.run.job_dir / "config.json")
    config = exported.job["config"]
    assert config["job_name"] == ours.job_name
    assert (config["n_attempts"], config["timeout_multiplier"]) == (1, 1.0)
    assert sorted(Path(task["path"]).name for task in config["tasks"]) == sorted(TASKS)
    (agent,) = config["agents"]
    assert agent["kwargs"] == {
        "condition": ours.manifest.condition,
        "manifest_sha256": ours.manifest.sha256,
    }
    result = exported.job["result"]
    assert result["id"] == ours.id and result["finished_at"] is not None
    assert result["n_total_trials"] == 2  # the plan's; the error trial was added beside it
    assert {t["trial_name"] for t in result["trial_results"]} == set(exported.trial_results())
    stats = result["stats"]
    assert (stats["n_completed_trials"], stats["n_errored_trials"]) == (3, 1)
    (evals,) = stats["evals"].values()
    scored = sorted(t["trial_name"] for t in result["trial_results"] if t["exception_info"] is None)
    assert sorted(evals["reward_stats"]["reward"]["1.0"]) == scored
    assert evals["exception_stats"] == {"AgentProcessExited": [ERROR_TRIAL]}
    (metric,) = evals["metrics"]  # Harbor's mean: of each reward key, as there are several
    assert metric["reward"] == 1.0 and metric.keys() == our_reward_keys(exported)
    (summary,) = exported.harbor["viewer"]["jobs"]
    assert (summary["n_completed_trials"], summary["n_errored_trials"]) == (3, 1)
    assert summary["agents"] == ["buzz-orchestra"] and summary["models"] == ["oracle-v1"]
    listed = exported.harbor["viewer"]["trials"][exported.run.job_dir.name]
    rewards = {trial["name"]: trial["reward"] for trial in listed}
    assert rewards == {
        name: (None if name == ERROR_TRIAL else 1.0) for name in [*scored, ERROR_TRIAL]
    }


def our_reward_keys(exported: ExportedRun) -> set[str]:
    return {key for trial in exported.trial_results().values()
            for key in (trial["verifier_result"] or {}).get("rewards", {})}  # fmt: skip


def test_the_orchestrator_trajectory_is_harbor_s_trajectory_json(exported: ExportedRun) -> None:
    for name in exported.trial_results():
        exported_file = exported.job_out / name / "agent" / "trajectory.json"
        trajectory = Trajectory.model_validate_json(exported_file.read_bytes())
        assert trajectory.steps
        assert not (exported.job_out / name / "agent" / "trajectories").exists()  # solo


def test_a_job_directory_exports_the_same_trials(exported: ExportedRun, scratch: Path) -> None:
    out = scratch / "from-job"
    code, output = invoke(str(exported.run.job_dir), str(out))
    assert code == 0, output
    assert sorted(check_harbor_jobs(out)["jobs"][exported.run.job_dir.name]["trials"]) == sorted(
        exported.trial_results()
    )


def test_a_non_empty_out_dir_is_refused_unless_forced(exported: ExportedRun) -> None:
    before = (exported.job_out / "result.json").read_bytes()
    code, output = invoke(str(exported.run.run_dir), str(exported.out))
    assert code == 1
    assert (
        output.strip()
        == f"error: {exported.out}: not empty (pass --force to replace the exported jobs)"
    )
    stray = exported.out / "keep-me.txt"
    stray.write_text("mine")
    code, output = invoke(str(exported.run.run_dir), str(exported.out), "--force")
    assert code == 0, output
    assert stray.read_text() == "mine"
    assert (exported.job_out / "result.json").read_bytes() == before


def test_a_directory_that_is_neither_a_run_nor_a_job_is_one_line_error(
    tmp_path: Path,
) -> None:
    code, output = invoke(str(tmp_path), str(tmp_path / "out"))
    assert (code, output) == (1, f"error: {tmp_path}: neither a run nor a job directory\n")
    assert not (tmp_path / "out").exists()
