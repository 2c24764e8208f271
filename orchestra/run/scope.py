"""What a `benchmark` or `resume` command runs: its scope.

A scope is a run (its `run.json` and its jobs, started ones or not) or, for job directories
made before runs existed, that one job. Either way the command names it before it starts and,
when it stops before the plan is done, the command line prints how to finish it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from orchestra.config.errors import display_path
from orchestra.documents.enums import StackMode
from orchestra.documents.job import JobConfig
from orchestra.documents.run_config import RunConfig
from orchestra.jobs.aggregate import JobRecord
from orchestra.jobs.layout import load_job_record, plan_inventory, scan_trials
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.run import RunTarget, run_job_records, run_progress
from orchestra.paths import JobPaths
from orchestra.plural import plural


@dataclass(frozen=True)
class RunScope:
    """What one command runs: a run, or one job directory from before runs (`run` None)."""

    jobs: tuple[PlannedJob, ...]
    jobs_dir: Path  # the directory that holds the job directories
    stored: RunConfig  # as stored: what `orchestra resume` uses unless told otherwise
    path: Path  # what `orchestra resume` takes
    run: RunTarget | None = None

    @property
    def n_planned(self) -> int:
        return sum(job.n_trials for job in self.jobs)

    @property
    def jobs_root(self) -> Path:
        """The jobs directory this unit lies in (the one that holds its run)."""
        return self.jobs_dir.parent if self.run is not None else self.jobs_dir

    def owed(self, keep_errors: bool) -> int:
        if self.run is not None:
            return run_progress(self.run.paths, self.run.record, keep_errors=keep_errors).owed
        [job] = self.jobs
        slots = [(attempt, task.name) for attempt, task in job.slots()]
        trials = scan_trials(JobPaths.of(self.jobs_dir, job.name))
        return len(plan_inventory(trials, slots, keep_errors=keep_errors).owed)

    def begin(self, owed: int) -> None:
        """Write the run record before any trial (a job keeps its own `config.json`)."""
        if self.run is not None:
            self.run.begin(owed)

    def records(self) -> list[JobRecord]:
        """Every job of the plan as its directory holds it; jobs not started count as such."""
        if self.run is not None:
            return run_job_records(self.run.paths, self.run.record)
        return [load_job_record(JobPaths.of(self.jobs_dir, job.name).root) for job in self.jobs]

    def report_dirs(self, requested: bool) -> list[tuple[list[Path], Path]]:
        """(job directories, output directory) of each report to write: the unit's own when
        asked for (now or when the run started) or when it exists, and every job's that
        exists, so that none keeps linking a trial a resume superseded."""
        job_dirs = [JobPaths.of(self.jobs_dir, job.name).root for job in self.jobs]
        started = [path for path in job_dirs if path.is_dir()]
        reports: list[tuple[list[Path], Path]] = []
        if started and (requested or self.stored.report or _has_report(self.path)):
            reports.append((started, self.path))
        reports += [([path], path) for path in started if path != self.path and _has_report(path)]
        return reports

    def describe(self, owed: int) -> str:
        """The line a command prints before it starts: which run, and what it still owes."""
        trials = plural(self.n_planned, "trial")
        if self.run is None:
            return f"resuming job {display_path(self.path)}: {owed} of {trials} owed"
        record = self.run.record
        shown = display_path(self.path)
        if self.run.origin == "new":
            return f"new run {shown}: {plural(len(self.jobs), 'job')}, {trials}"
        how = "the most recent unfinished run of this plan" if self.run.origin == "found" else ""
        note = " (--new-run starts a new run instead)" if self.run.origin == "found" else ""
        return (
            f"resuming run {shown}{f', {how}' if how else ''} (started {record.created_at}): "
            f"{owed} of {trials} owed{note}"
        )


def _has_report(directory: Path) -> bool:
    return (directory / "report.json").is_file()


def stored_config_of_job(config: JobConfig) -> RunConfig:
    """The config a job from before runs was started with: its `options`, with the stack and
    environment its `config.json` records."""
    external = config.stack.mode is StackMode.EXTERNAL
    return config.options.model_copy(
        update={
            "stack": config.stack.mode,
            "env": config.environment,
            "relay_url": config.stack.relay_ws_url if external else None,
        }
    )


def storable_database_url(url: str | None) -> str | None:
    """The URL, when it carries no password (then it is no secret and a resume reuses it)."""
    return None if url is None or urlsplit(url).password is not None else url


def masked_database_url(url: str) -> str:
    """The URL with its password replaced by `PASSWORD`, for the printed resume command."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:PASSWORD@{host}"))
