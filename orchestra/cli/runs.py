"""What a `benchmark` or `resume` command runs as one unit, and the command that resumes it.

A unit is a run (its `run.json` and its jobs, started ones or not) or, for job directories
made before runs existed, that one job. Either way the command names it before it starts and,
when it stops before the plan is done, prints the exact command that finishes it.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from orchestra.cli.execution import Execution
from orchestra.config.errors import display_path
from orchestra.documents.enums import StackMode
from orchestra.documents.job import JobConfig
from orchestra.documents.run import RunSettings
from orchestra.jobs.aggregate import JobRecord
from orchestra.jobs.controls import RunControls
from orchestra.jobs.layout import load_job_record, plan_inventory, scan_trials
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.run import RunTarget, run_job_records, run_progress
from orchestra.paths import JobPaths
from orchestra.plural import plural
from orchestra.stack.select import Modes
from orchestra.trial.context import RunOptions

PROGRAM = "orchestra"


@dataclass(frozen=True)
class Invocation:
    """How this command runs the unit (what is not part of what is measured)."""

    n_concurrent: int
    keep_errors: bool
    quiet: bool
    report: bool
    state_dir: Path
    relay_port: int
    relay_url: str | None
    database_url: str | None
    endpoint_config: Path
    fresh: bool = False
    #: the live endpoint check before the stack starts (issue 13); off for the oracle anyway
    check_endpoints: bool = True
    controls: RunControls = field(default_factory=RunControls)
    #: where the trials run (scale-out.md §1); not part of what is measured
    execution: Execution = field(default_factory=Execution)


@dataclass(frozen=True)
class Unit:
    """A run, or one job directory from before runs (`run` None)."""

    jobs: tuple[PlannedJob, ...]
    jobs_dir: Path  # the directory that holds the job directories
    settings: RunSettings  # as stored: what `orchestra resume` uses unless told otherwise
    environment: str
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
        if started and (requested or self.settings.report or _has_report(self.path)):
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


def settings_of_job(config: JobConfig) -> RunSettings:
    """The run settings a job from before runs was started with (from its `config.json`)."""
    options = config.options
    external = config.stack.mode is StackMode.EXTERNAL
    return RunSettings(
        manifest=config.manifest.path,
        endpoint_config=options.endpoint_config,
        artifact_root=options.artifact_root,
        stack=config.stack.mode,
        relay_url=config.stack.relay_ws_url if external else None,
        database_url=None,
        relay_port=options.relay_port,
        state_dir=options.state_dir,
        n_concurrent=options.n_concurrent,
        timeout_multiplier=options.timeout_multiplier,
        keep_channels=options.keep_channels,
        keep_containers=options.keep_containers,
        settle_ms=options.settle_ms,
        buzz_bin_dir=options.buzz_bin_dir,
        report=False,
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


def program() -> str:
    """How this command was invoked (`.venv/bin/orchestra`), when it can be run the same way."""
    invoked = sys.argv[0] if sys.argv else ""
    return invoked if Path(invoked).name == PROGRAM else PROGRAM


def _absolute(path: Path | str | None) -> str | None:
    return None if path is None else Path(path).absolute().as_posix()


def resume_command(unit: Unit, modes: Modes, options: RunOptions, invocation: Invocation) -> str:
    """`orchestra resume <dir>` with every option of this command that the stored settings do
    not already give (a database password is masked, never printed)."""
    stored = unit.settings
    args = [program(), "resume", display_path(unit.path)]
    if invocation.n_concurrent != stored.n_concurrent:
        args += ["-n", str(invocation.n_concurrent)]
    if options.timeout_multiplier != stored.timeout_multiplier:
        args += ["--timeout-multiplier", f"{options.timeout_multiplier:g}"]
    if _absolute(options.buzz_bin_dir) != _absolute(stored.buzz_bin_dir):
        args += ["--buzz-bin-dir", str(options.buzz_bin_dir)]
    if _absolute(invocation.endpoint_config) != _absolute(stored.endpoint_config):
        args += ["--endpoint-config", str(invocation.endpoint_config)]
    if modes.stack != stored.stack.value:
        args += ["--stack", modes.stack]
    if modes.env != unit.environment:
        args += ["--env", modes.env]
    if invocation.relay_url is not None and invocation.relay_url != stored.relay_url:
        args += ["--relay-url", invocation.relay_url]
    if invocation.database_url is not None and invocation.database_url != stored.database_url:
        args += ["--database-url", masked_database_url(invocation.database_url)]
    if invocation.relay_port != stored.relay_port:
        args += ["--relay-port", str(invocation.relay_port)]
    if _absolute(invocation.state_dir) != _absolute(stored.state_dir):
        args += ["--state-dir", str(invocation.state_dir)]
    args += invocation.execution.resume_args()
    if invocation.keep_errors:
        args.append("--keep-errors")
    if invocation.report and not stored.report:
        args.append("--report")
    if invocation.quiet:
        args.append("-q")
    return shlex.join(args)
