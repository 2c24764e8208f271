"""`orchestra export harbor` on a real oracle run (issue 20.3): every document it writes parses
through the strict Harbor 0.25 models, every trial is there with its rewards, tokens, timings,
trajectory and verifier files, an error trial carries `exception_info`, and a run and a job
directory are both accepted."""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e.e2e_jobs import DATASET, JobRun, run_orchestra_job
from typer.testing import CliRunner

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.cli.main import app
from orchestra.documents.enums import ErrorType, Phase, TrialStatus
from orchestra.documents.job import JobConfig
from orchestra.documents.trial import ExceptionInfo, TrialConfig, TrialResult
from orchestra.export import harbor_models as harbor

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASKS = ("user-mention", "reply-to-thread")
ERROR_TRIAL = "user-mention__errored"
ERROR_MESSAGE = "the agent process exited with code 1 before it was ready"


@dataclass(frozen=True)
class ExportedRun:
    run: JobRun
    out: Path

    @property
    def job_out(self) -> Path:
        return self.out / self.run.job_dir.name


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["export", "harbor", *args])
    return result.exit_code, result.output


def add_error_trial(job_dir: Path) -> None:
    """A copy of a real trial turned into one that ended in a harness error, written through
    our model (the way the trial writes one), so the job holds scored and error trials."""
    (source,) = [p for p in job_dir.iterdir() if p.name.startswith(TASKS[0] + "__")]
    target = job_dir / ERROR_TRIAL
    shutil.copytree(source, target)
    shutil.rmtree(target / "verifier")
    result = TrialResult.load(target / "result.json")
    occurred = result.timings.setup.finished_at if result.timings.setup else result.started_at
    errored = result.model_copy(
        update={
            "trial_id": str(uuid.uuid4()),
            "trial_name": ERROR_TRIAL,
            "attempt": 2,
            "status": TrialStatus.ERROR,
            "reward": None,
            "rewards": None,
            "exception_info": ExceptionInfo(
                exception_type=ErrorType.AGENT_PROCESS_EXITED,
                exception_message=ERROR_MESSAGE,
                exception_traceback="Traceback (most recent call last): …",
                occurred_at=occurred,
                phase=Phase.AGENT,
            ),
        }
    )
    errored.write(target / "result.json")
    config = TrialConfig.load(target / "config.json")
    update = {"trial_id": errored.trial_id, "trial_name": ERROR_TRIAL, "attempt": 2}
    config.model_copy(update=update).write(target / "config.json")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("export")


@pytest.fixture(scope="module")
def oracle_run(scratch: Path, relay_url: str, embedded_pg) -> JobRun:
    tasks = scratch / "tasks"
    for task in TASKS:
        shutil.copytree(DATASET / task, tasks / task, ignore=shutil.ignore_patterns("__pycache__"))
    stack = ["--stack", "external", "--relay-url", relay_url]
    database = ["--database-url", embedded_pg.new_database_url()]
    run = run_orchestra_job(scratch, tasks, "harbor-export", *stack, *database)
    assert run.returncode == 0, run.output
    add_error_trial(run.job_dir)
    return run


@pytest.fixture(scope="module")
def exported(oracle_run: JobRun, scratch: Path) -> ExportedRun:
    out = scratch / "harbor-jobs"
    code, output = invoke(str(oracle_run.run_dir), str(out))
    assert code == 0, output
    assert output == f"wrote {out / oracle_run.job_dir.name} (3 trials)\n"
    return ExportedRun(oracle_run, out)


def trial_results(job_out: Path) -> dict[str, harbor.TrialResult]:
    return {
        p.name: harbor.TrialResult.model_validate_json((p / "result.json").read_bytes())
        for p in sorted(job_out.iterdir())
        if p.is_dir()
    }


def test_every_trial_round_trips_with_its_rewards_tokens_and_timings(
    exported: ExportedRun,
) -> None:
    ours = {p.name: TrialResult.load(p / "result.json") for p in exported.run.job_dir.iterdir()
            if (p / "result.json").is_file() and p.is_dir()}  # fmt: skip
    theirs = trial_results(exported.job_out)
    assert sorted(theirs) == sorted(ours) and len(theirs) == 3
    for name, trial in theirs.items():
        our = ours[name]
        assert (trial.id, trial.trial_name, trial.task_name) == (
            uuid.UUID(our.trial_id), our.trial_name, our.task_name
        )  # fmt: skip
        assert trial.trial_uri == (exported.job_out / name).absolute().as_uri()
        assert trial.agent_info.name == "buzz-orchestra"
        assert trial.agent_info.model_info == harbor.ModelInfo(name="oracle-v1", provider="oracle")
        assert (
            trial.started_at is not None
            and trial.started_at.isoformat().replace("+00:00", "Z") == our.started_at
        )
        assert trial.environment_setup is not None and trial.agent_execution is not None
        if our.status is TrialStatus.SCORED:
            assert trial.exception_info is None
            assert trial.verifier_result is not None
            assert trial.verifier_result.rewards == our.rewards
            assert trial.verifier_result.rewards["reward"] == 1.0
            assert trial.verifier is not None
            assert our.tokens is not None and trial.agent_result == harbor.AgentContext(
                n_input_tokens=our.tokens.input,
                n_cache_tokens=our.tokens.cached_input,
                n_output_tokens=our.tokens.output,
                cost_usd=our.cost_usd,
            )
            assert (exported.job_out / name / "verifier" / "reward.json").read_bytes() == (
                exported.run.job_dir / name / "verifier" / "reward.json"
            ).read_bytes()
        config = harbor.TrialConfig.model_validate_json(
            (exported.job_out / name / "config.json").read_bytes()
        )
        assert config == trial.config and config.trial_name == name


def test_an_error_trial_carries_its_exception_info(exported: ExportedRun) -> None:
    trial = trial_results(exported.job_out)[ERROR_TRIAL]
    assert trial.verifier_result is None
    assert trial.exception_info is not None
    assert trial.exception_info.exception_type == "AgentProcessExited"
    assert trial.exception_info.exception_message == ERROR_MESSAGE
    assert trial.exception_info.occurred_at.tzinfo is not None


def test_the_job_documents_count_every_trial(exported: ExportedRun) -> None:
    ours = JobConfig.load(exported.run.job_dir / "config.json")
    config = harbor.JobConfig.model_validate_json((exported.job_out / "config.json").read_bytes())
    assert config.job_name == ours.job_name
    assert (config.n_attempts, config.timeout_multiplier) == (1, 1.0)
    assert sorted(Path(task.path).name for task in config.tasks) == sorted(TASKS)
    (agent,) = config.agents
    assert agent.kwargs == {
        "condition": ours.manifest.condition,
        "manifest_sha256": ours.manifest.sha256,
    }
    result = harbor.JobResult.model_validate_json((exported.job_out / "result.json").read_bytes())
    assert result.id == uuid.UUID(ours.id) and result.finished_at is not None
    assert result.n_total_trials == 2  # the plan's; the error trial was added beside it
    assert {t.trial_name for t in result.trial_results} == set(trial_results(exported.job_out))
    assert (result.stats.n_trials, result.stats.n_errors) == (3, 1)
    (stats,) = result.stats.evals.values()
    scored = sorted(t.trial_name for t in result.trial_results if t.exception_info is None)
    assert sorted(stats.reward_stats["reward"][1.0]) == scored
    assert stats.exception_stats == {"AgentProcessExited": [ERROR_TRIAL]}


def test_the_orchestrator_trajectory_is_harbor_s_trajectory_json(exported: ExportedRun) -> None:
    for name in trial_results(exported.job_out):
        exported_file = exported.job_out / name / "agent" / "trajectory.json"
        trajectory = Trajectory.model_validate_json(exported_file.read_bytes())
        assert trajectory.steps
        assert not (exported.job_out / name / "agent" / "trajectories").exists()  # solo


def test_a_job_directory_exports_the_same_trials(exported: ExportedRun, scratch: Path) -> None:
    out = scratch / "from-job"
    code, output = invoke(str(exported.run.job_dir), str(out))
    assert code == 0, output
    assert sorted(trial_results(out / exported.run.job_dir.name)) == sorted(
        trial_results(exported.job_out)
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
