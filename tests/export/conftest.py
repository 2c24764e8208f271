"""The run every export test reads (package scope: one oracle run for the Harbor and the
Inspect export tests): user-mention and reply-to-thread under the oracle in the local env,
plus a copy of one trial turned into a harness error."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from e2e.e2e_jobs import DATASET, JobRun, run_orchestra_job
from export_runs import ERROR_MESSAGE, ERROR_TRIAL, TASKS

from orchestra.documents.enums import ErrorType, Phase, TrialStatus
from orchestra.documents.trial import ExceptionInfo, TrialConfig, TrialResult


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


@pytest.fixture(scope="package")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("export")


@pytest.fixture(scope="package")
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
