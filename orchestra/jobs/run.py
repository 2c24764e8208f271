"""Runs: the jobs of one plan as a unit (`<jobs-dir>/<run name>/run.json` above the job
directories), which run a command starts or resumes, and how far a run got.

A run is matched by its plan, not its name: the jobs' layers and replay identities (§2.5), so
the UTC stamp in a default name never stops a rerun of the same command from finding it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import chain, count
from pathlib import Path
from typing import Literal

from orchestra.config.canonical import canonical_sha256
from orchestra.config.condition import Condition
from orchestra.config.errors import display_path
from orchestra.config.task import Task, load_task
from orchestra.documents.enums import EnvKind
from orchestra.documents.io import DocumentError
from orchestra.documents.job import endpoint_records
from orchestra.documents.run import RunJob, RunRecord, RunResume
from orchestra.documents.run_config import RunConfig
from orchestra.jobs.aggregate import JobRecord, served_models
from orchestra.jobs.floor import attach_floor
from orchestra.jobs.identity import differing_fields, replay_components, replay_record
from orchestra.jobs.layout import load_job_record, orchestrator_version, plan_inventory, scan_trials
from orchestra.jobs.plan import (
    PlanError,
    PlannedJob,
    check_job_name,
    job_base_name,
    plan_jobs,
)
from orchestra.jsonio import utc_timestamp
from orchestra.paths import RunPaths

#: How a command came to its run: a new one, the one `--run-name` names, or the most recent
#: unfinished run of the same plan.
RunOrigin = Literal["new", "named", "found"]


@dataclass(frozen=True)
class RunRequest:
    """What a command asks to run, before a run (and so the job names) is chosen."""

    condition: Condition
    environment: EnvKind
    tasks: tuple[Task, ...]
    config: RunConfig  # as the run stores it

    def jobs(self, base_name: str) -> tuple[PlannedJob, ...]:
        return plan_jobs(self.tasks, self.config.selection.attempts, base_name)

    def record(self, run_name: str, jobs: Sequence[PlannedJob]) -> RunRecord:
        """The `run.json` of a new run with these jobs."""
        planned = run_jobs(self.condition, self.environment, jobs)
        return RunRecord(
            run_name=run_name,
            id=str(uuid.uuid4()),
            created_at=utc_timestamp(),
            orchestrator_version=orchestrator_version(),
            condition=self.condition.name,
            manifest_sha256=self.condition.manifest_sha256,
            endpoints=endpoint_records(self.condition.used_endpoints()),
            environment=self.environment,
            plan_identity=plan_identity(planned),
            jobs=planned,
            settings=self.config,
        )


def run_jobs(
    condition: Condition, environment: EnvKind, jobs: Sequence[PlannedJob]
) -> list[RunJob]:
    """The jobs as a run record lists them: name, plan and replay identity (§2.5)."""
    return [
        RunJob(
            job_name=job.name,
            plan=job.plan_record(),
            replay_identity=replay_record(
                replay_components(condition, environment, job.attempts, job.tasks)
            ),
        )
        for job in jobs
    ]


def plan_identity(jobs: Sequence[RunJob]) -> str:
    """The jobs' layers and replay identities in plan order; names are left out."""
    return canonical_sha256(
        [{"layer": job.plan.layer, "replay_identity": job.replay_identity.sha256} for job in jobs]
    )


def plan_differences(stored: Sequence[RunJob], current: Sequence[RunJob]) -> list[str]:
    """The replay-identity fields (§2.5) in which two plans differ; `jobs` when they split the
    tasks into other jobs."""
    if plan_identity(stored) == plan_identity(current):
        return []
    if [job.plan.layer for job in stored] != [job.plan.layer for job in current]:
        return ["jobs"]
    changed = {
        name
        for old, new in zip(stored, current, strict=True)
        for name in differing_fields(old.replay_identity, new.replay_identity)
    }
    return sorted(changed) or ["plan"]


def check_plan_unchanged(
    paths: RunPaths, record: RunRecord, condition: Condition, environment: EnvKind
) -> tuple[PlannedJob, ...]:
    """The run's jobs as `orchestra resume` runs them, with their tasks loaded from the
    directories the plan recorded; `PlanError` naming the fields when the tasks, the condition
    or the environment no longer match the plan (a job not started yet has no config of its
    own to refuse it)."""
    jobs = stored_jobs(record)
    changed = plan_differences(record.jobs, run_jobs(condition, environment, jobs))
    if changed:
        raise PlanError(
            f"run {paths.name} cannot be resumed: its plan changed since it started "
            f"({', '.join(changed)}); start a new run"
        )
    return jobs


@dataclass(frozen=True)
class RunProgress:
    """How far a run got, counted over its whole plan (jobs not started included)."""

    planned: int
    owed: int  # trials a resume would run now (errors included unless kept)
    unfinished: int  # slots with no scored or error trial: cancelled, running, not started

    @property
    def finished(self) -> bool:
        """Every planned trial ran to the end (scored or error): the run is not resumed by
        default, only when named."""
        return self.unfinished == 0


def run_progress(paths: RunPaths, record: RunRecord, *, keep_errors: bool) -> RunProgress:
    """Read-only: nothing moves (`DocumentError` when a job's documents are malformed)."""
    owed = unfinished = 0
    for job in record.jobs:
        slots = job.plan.slots()
        trials = scan_trials(paths.job(job.job_name))
        owed += len(plan_inventory(trials, slots, keep_errors=keep_errors).owed)
        unfinished += len(plan_inventory(trials, slots, keep_errors=True).owed)
    return RunProgress(record.n_planned, owed, unfinished)


@dataclass(frozen=True)
class RunTarget:
    """The run a command works on: its directory, its record and its jobs, named as the
    record names them."""

    paths: RunPaths
    record: RunRecord
    jobs: tuple[PlannedJob, ...]
    origin: RunOrigin

    def begin(self, owed_trials: int) -> None:
        """Write the record before any trial: a new run's, or a resume appended to it."""
        if self.origin == "new":
            self.paths.root.mkdir(parents=True, exist_ok=True)
        else:
            self.record.resumes.append(RunResume(at=utc_timestamp(), owed_trials=owed_trials))
        self.record.write(self.paths.run_json)


def _stored_run(paths: RunPaths, option: str) -> RunRecord | None:
    """The run in `paths`, None when the directory is free; `PlanError` when it holds
    something else."""
    if paths.run_json.exists():
        return RunRecord.load(paths.run_json)
    if not paths.root.exists() or (paths.root.is_dir() and not any(paths.root.iterdir())):
        return None
    shown = display_path(paths.root)
    if (paths.root / "config.json").exists():
        raise PlanError(
            f"{shown} is a job directory from before runs; resume it with "
            f"`orchestra resume {shown}` or choose another {option}"
        )
    raise PlanError(f"{shown} exists and is not a run; choose another {option}")


def _resumed(
    paths: RunPaths, stored: RunRecord, current: RunRecord, jobs: Sequence[PlannedJob], *,
    origin: RunOrigin, option: str,
) -> RunTarget:  # fmt: skip
    changed = plan_differences(stored.jobs, current.jobs)
    if changed:
        raise PlanError(
            f"run {paths.name} exists with a different configuration ({', '.join(changed)}); "
            f"choose another {option}"
        )
    named = tuple(
        replace(job, name=stored_job.job_name)
        for job, stored_job in zip(jobs, stored.jobs, strict=True)
    )
    return RunTarget(paths, stored, named, origin)


def choose_run(
    jobs_dir: Path,
    request: RunRequest,
    *,
    run_name: str | None,
    job_name: str | None,
    new_run: bool,
    now: datetime | None = None,
) -> tuple[RunTarget, list[str]]:
    """The run a `benchmark` command works on, and warnings about runs it could not read.

    A name (`--run-name`, else `--job-name`) resumes the run of that name when it exists with
    the same plan, and is refused when the plan differs. Without one, the most recent
    unfinished run of the same dataset and plan is resumed (unless `new_run`); otherwise a new
    run `<condition>-<UTC stamp>` starts. Job names are the run name (one job) or
    `<name>-<layer>` (§2.3), with `--job-name` as their base when given.
    """
    if run_name is not None or job_name is not None:
        option = "--run-name" if run_name is not None else "--job-name"
        name = run_name or job_name or ""
        check_job_name(name, option=option)
        paths = RunPaths.of(jobs_dir, name)
        jobs = request.jobs(job_name or name)
        current = request.record(name, jobs)
        stored = _stored_run(paths, option)
        if stored is None:
            return RunTarget(paths, current, jobs, "new"), []
        return _resumed(paths, stored, current, jobs, origin="named", option=option), []
    name = _free_name(jobs_dir, job_base_name(request.condition.name, None, now))
    jobs = request.jobs(name)
    current = request.record(name, jobs)
    warnings: list[str] = []
    if not new_run:
        found, warnings = find_unfinished_run(jobs_dir, current)
        if found is not None:
            paths, stored = found
            target = _resumed(paths, stored, current, jobs, origin="found", option="--run-name")
            return target, warnings
    return RunTarget(RunPaths.of(jobs_dir, name), current, jobs, "new"), warnings


def _free_name(jobs_dir: Path, base: str) -> str:
    """`base`, or `base-2`, `base-3`, … when a directory of that name exists (two runs started
    within one second)."""
    candidates = chain([base], (f"{base}-{n}" for n in count(2)))
    return next(name for name in candidates if not (jobs_dir / name).exists())


def find_unfinished_run(
    jobs_dir: Path, current: RunRecord
) -> tuple[tuple[RunPaths, RunRecord] | None, list[str]]:
    """The most recent run in `jobs_dir` of the same dataset and plan that did not finish, and
    a warning for each run record that could not be read (such a run is not considered)."""
    found: list[tuple[str, RunPaths, RunRecord]] = []
    warnings: list[str] = []
    children = sorted(jobs_dir.iterdir()) if jobs_dir.is_dir() else []
    for child in children:
        paths = RunPaths(child)
        if not paths.run_json.is_file():
            continue
        try:
            stored = RunRecord.load(paths.run_json)
            if (stored.plan_identity, stored.settings.selection.paths) != (
                current.plan_identity,
                current.settings.selection.paths,
            ):
                continue
            if not run_progress(paths, stored, keep_errors=True).finished:
                found.append((stored.created_at, paths, stored))
        except DocumentError as error:
            warnings.append(f"{error}; run {child.name} is not considered for resuming")
    if not found:
        return None, warnings
    _, paths, stored = max(found, key=lambda entry: entry[0])
    return (paths, stored), warnings


# --- reading runs -------------------------------------------------------------------------------


def run_of(path: Path) -> RunPaths | None:
    """The run `path` is (a run directory) or belongs to (one of its job directories)."""
    for candidate in (path, path.parent):
        if RunPaths(candidate).run_json.is_file():
            return RunPaths(candidate)
    return None


def stored_jobs(record: RunRecord) -> tuple[PlannedJob, ...]:
    """The run's jobs with their tasks loaded from the directories the plan recorded
    (`ConfigError` when one is gone or no longer valid)."""
    return tuple(
        PlannedJob(
            job.job_name,
            job.plan.layer,
            job.plan.attempts,
            tuple(load_task(Path(task.dir)) for task in job.plan.tasks),
        )
        for job in record.jobs
    )


def run_job_records(paths: RunPaths, record: RunRecord) -> list[JobRecord]:
    """Every job of the run's plan, in order: read from its directory, or, for a job never
    started, its plan with no trials (so summaries count its trials as not started)."""
    records = []
    for job in record.jobs:
        job_paths = paths.job(job.job_name)
        if job_paths.config_json.exists():
            records.append(load_job_record(job_paths.root))
            continue
        not_started = JobRecord.of_plan(
            job.job_name, job_paths.root, record.condition, record.manifest_sha256, job.plan,
            oracle=record.is_oracle, models=served_models(record.endpoints), started=False,
        )  # fmt: skip
        records.append(not_started)
    attach_floor(records, paths)
    return records


def job_records(path: Path) -> list[JobRecord]:
    """A run directory as its jobs, or one job directory (`DocumentError` when it is neither
    or a document in it is malformed)."""
    paths = RunPaths(path)
    if paths.run_json.exists():
        return run_job_records(paths, RunRecord.load(paths.run_json))
    records = [load_job_record(path)]
    if RunPaths(path.parent).run_json.exists():  # one job of a run: the run's floor too
        attach_floor(records, RunPaths(path.parent))
    return records


def job_dirs_in(jobs_dir: Path) -> list[tuple[str | None, Path]]:
    """Every job directory under `jobs_dir` with the name of the run that holds it: the jobs
    of each run, and job directories from before runs (run None)."""
    found: list[tuple[str | None, Path]] = []
    children = sorted(p for p in jobs_dir.iterdir() if p.is_dir()) if jobs_dir.is_dir() else []
    for child in children:
        if RunPaths(child).run_json.is_file():
            found += [(child.name, job) for job in sorted(child.iterdir()) if _visible_dir(job)]
        else:
            found.append((None, child))
    return found


def trial_sandboxes(jobs_dir: Path, name: str | None = None) -> list[Path]:
    """The local-env sandboxes of every trial under `jobs_dir`, or of the job or run `name`."""
    return sorted(
        sandbox
        for run_name, job_dir in job_dirs_in(jobs_dir)
        if name is None or name in (run_name, job_dir.name)
        for sandbox in job_dir.glob("*/sandbox")
    )


def _visible_dir(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith(".")
