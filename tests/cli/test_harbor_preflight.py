"""Preflight of Harbor tasks in the local env (docs/decisions.md D46): a Dockerfile that needs
Docker is one line naming the file and line, before anything starts."""

import shutil
from pathlib import Path

from harbor_support import HARBOR_TASKS
from typer.testing import CliRunner

from orchestra.cli.main import app


def test_a_dockerfile_the_local_env_cannot_honour_fails_preflight(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(HARBOR_TASKS, tasks)
    dockerfile = tasks / "wrong-sum" / "environment" / "Dockerfile"
    dockerfile.write_text("FROM python:3.12-slim-bookworm\nRUN apt-get update\n")
    args = ["benchmark", "--path", str(tasks), "--env", "local", "--dry-run"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        f"error: {dockerfile}: line 2: RUN is not supported; the local env cannot build it "
        "(use --env docker)"
    )
    docker = CliRunner().invoke(app, [*args[:4], "docker", "--dry-run"])
    assert docker.exit_code == 0, docker.output
