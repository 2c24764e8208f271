"""`orchestra export harbor` on a docker-env run, loaded by the real `harbor` package.

The run is recorded (tests/fixtures/docker-env-run: `orchestra benchmark --env docker` of
user-mention and reply-to-thread under the oracle, its documents, trajectories and verifier
files as written), so no Docker engine is needed here; what it exercises is the export of a
docker-env job, which only this run's documents carry."""

from __future__ import annotations

import shutil
from pathlib import Path

from harbor_real import check_harbor_jobs
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.paths import PROJECT_ROOT

RECORDED_RUN = PROJECT_ROOT / "tests" / "fixtures" / "docker-env-run"
JOB = "docker-env"


def test_a_docker_env_run_loads_in_harbor_as_our_docker_environment(tmp_path: Path) -> None:
    run = shutil.copytree(RECORDED_RUN, tmp_path / "run")
    out = tmp_path / "harbor-jobs"
    exported = CliRunner().invoke(app, ["export", "harbor", str(run), str(out)])
    assert exported.exit_code == 0, exported.output
    job = check_harbor_jobs(out, task_checksums=False)["jobs"][JOB]
    environment = {
        "type": None,
        "import_path": "orchestra.trial.env.docker:DockerEnvironment",
        "kwargs": {"buzz_orchestra_env": "docker"},
    }
    configs = [job["config"], *(trial["config"] for trial in job["trials"].values())]
    for config in configs:
        assert {key: config["environment"][key] for key in environment} == environment
    rewards = {
        trial["result"]["task_name"]: trial["result"]["verifier_result"]["rewards"]["reward"]
        for trial in job["trials"].values()
    }
    assert rewards == {"buzz-native/user-mention": 1.0, "buzz-native/reply-to-thread": 1.0}
    assert job["result"]["stats"]["n_completed_trials"] == 2
