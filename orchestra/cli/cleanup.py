"""`orchestra cleanup` (orchestrator.md §2.6): leftover trial containers and local processes.

Local processes are killed whatever Docker does; what could not be checked is said on stderr
and is not a failure (without an engine no container of ours can be running).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from orchestra.jobs.run import trial_sandboxes
from orchestra.processes import kill_processes_in
from orchestra.stack.select import docker_engine_problem
from orchestra.trial.env.container import DockerEnvError, cleanup_containers


def _remove_containers(job: str | None) -> str | None:
    """Remove the labelled containers; the reason they could not be checked, if so."""
    problem = docker_engine_problem()
    if problem is not None:
        return problem
    try:
        removed = asyncio.run(cleanup_containers(job))
    except DockerEnvError as error:
        return str(error)
    typer.echo(f"removed {len(removed)} container(s)")
    return None


def run_cleanup(job: str | None, jobs_root: Path) -> None:
    not_checked = _remove_containers(job)
    killed = sum(len(kill_processes_in(sandbox)) for sandbox in trial_sandboxes(jobs_root, job))
    typer.echo(f"killed {killed} leftover process(es)")
    if not_checked is not None:
        typer.echo(f"note: containers not checked: {not_checked}", err=True)
