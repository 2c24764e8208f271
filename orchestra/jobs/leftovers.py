"""What runs whose orchestrator died left behind (orchestrator.md §2.5 "Leftovers").

One process runs a job at a time: it holds `<job>/.lock` (`orchestra.locks.OwnerLock`), which
the kernel releases when that process dies, however it dies. A job nobody holds whose trials
are still `running` was lost with its orchestrator. Before such a job resumes, whatever of its
trials still runs is ended (`reap_job`): local-env processes found by the HOME/TMPDIR of the
trial's sandbox (sandboxed trees and tied processes died with the orchestrator already; an
unsandboxed tree's detached descendants may not have), and the job's trial containers (docker
env). Each lost trial becomes `error` `OrchestratorLost`, which resume re-runs like a running
one. `reap_jobs_dir` ends the processes of every such job of a jobs directory before a
benchmark starts, and leaves their documents to their own resume.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from orchestra.documents.enums import EnvKind, ErrorType, TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig, JobResult
from orchestra.documents.trial import ExceptionInfo, TrialResult
from orchestra.errors import OrchestraError
from orchestra.jobs.layout import ExistingTrial, scan_trials
from orchestra.jobs.run import job_dirs_in
from orchestra.jsonio import utc_timestamp
from orchestra.locks import OwnerLock
from orchestra.paths import JobPaths
from orchestra.processes import kill_processes_in
from orchestra.trial.env.container import DockerEnvError, cleanup_containers

LOST_MESSAGE = "the orchestrator running this trial died (it was in phase {phase})"


class JobInUse(OrchestraError):
    """Another live orchestra process runs the job (exit 2, nothing was started)."""

    exit_code = 2


def in_use_message(paths: JobPaths, holder: int | None) -> str:
    by = f" (pid {holder})" if holder is not None else ""
    return (
        f"job {paths.name} is being run by another orchestra process{by}; "
        "wait for it to finish or stop it"
    )


def claim_job(paths: JobPaths) -> OwnerLock:
    """Hold the job for this process until `release()`; `JobInUse` when another holds it."""
    lock = OwnerLock(paths.lock)
    if not lock.acquire():
        raise JobInUse(in_use_message(paths, lock.holder()))
    lock.claim()
    return lock


def check_job_free(paths: JobPaths) -> None:
    """`JobInUse` now, before anything starts, when another process runs the job."""
    if not paths.lock.exists():
        return
    lock = OwnerLock(paths.lock)
    if not lock.acquire():
        raise JobInUse(in_use_message(paths, lock.holder()))
    lock.let_go()


def lost_trials(paths: JobPaths) -> list[ExistingTrial]:
    """Trials the job's last orchestrator left `running` (call with the job claimed)."""
    return [
        trial
        for trial in scan_trials(paths)
        if trial.result is not None and trial.result.status is TrialStatus.RUNNING
    ]


async def end_leftovers(paths: JobPaths, trials: list[ExistingTrial]) -> list[str]:
    """Kill what is left of `trials`; returns notes for job.log."""
    notes: list[str] = []
    for trial in trials:
        killed = kill_processes_in(trial.path / "sandbox")
        if killed:
            notes.append(f"{trial.name}: killed {len(killed)} leftover process(es): {killed}")
    config = JobConfig.load_if_readable(paths.config_json)
    if trials and config is not None and config.environment is EnvKind.DOCKER:
        if shutil.which("docker") is not None:
            try:
                removed = await cleanup_containers(paths.name)
            except DockerEnvError as error:
                notes.append(f"removing leftover containers failed: {error}")
            else:
                if removed:
                    notes.append(f"removed leftover container(s): {', '.join(removed)}")
    return notes


def mark_lost(trial: ExistingTrial) -> TrialResult:
    """The trial's result.json as `error` `OrchestratorLost` (§12), in the phase it was in."""
    assert trial.result is not None
    now = utc_timestamp()
    phase = trial.result.phase
    lost = trial.result.model_copy(
        update={
            "status": TrialStatus.ERROR,
            "finished_at": now,
            "exception_info": ExceptionInfo(
                exception_type=ErrorType.ORCHESTRATOR_LOST,
                exception_message=LOST_MESSAGE.format(phase=phase.value),
                exception_traceback="",
                occurred_at=now,
                phase=phase,
            ),
        }
    )
    lost.write(trial.path / "result.json")
    return lost


async def reap_job(paths: JobPaths, log: Callable[[str], None]) -> list[str]:
    """A claimed job's lost trials: leftovers ended, each marked `OrchestratorLost`; their
    names."""
    trials = lost_trials(paths)
    for note in await end_leftovers(paths, trials):
        log(note)
    for trial in trials:
        mark_lost(trial)
        log(f"{trial.name}: OrchestratorLost (left running by an orchestrator that died)")
    return [trial.name for trial in trials]


async def reap_jobs_dir(jobs_dir: Path, *, skip: set[Path]) -> list[str]:
    """End the leftovers of every job in `jobs_dir` (each run's, and those from before runs)
    that nobody runs but that has running trials, other than the job directories in `skip`,
    which this command claims and reaps itself."""
    notes: list[str] = []
    for paths, trials in abandoned_jobs(jobs_dir, skip=skip):
        notes += [f"{paths.name}: {note}" for note in await end_leftovers(paths, trials)]
    return notes


def abandoned_jobs(
    jobs_dir: Path, *, skip: set[Path]
) -> list[tuple[JobPaths, list[ExistingTrial]]]:
    """Jobs whose last holder died with trials still running, and those trials."""
    found: list[tuple[JobPaths, list[ExistingTrial]]] = []
    skipped = {path.resolve() for path in skip}
    for _, job_dir in job_dirs_in(jobs_dir):
        paths = JobPaths(job_dir)
        if job_dir.resolve() in skipped or not paths.lock.exists():
            continue
        lock = OwnerLock(paths.lock)
        if not lock.acquire():
            continue  # a live process runs it
        try:
            if lock.previous is not None and _has_running_trials(paths):
                found.append((paths, lost_trials(paths)))
        except DocumentError:
            continue  # a malformed job is its own resume's problem
        finally:
            lock.let_go()
    return found


def _has_running_trials(paths: JobPaths) -> bool:
    result = JobResult.load_if_readable(paths.result_json)
    return result is None or result.stats.n_running > 0
