"""A job directory: its config, the trials it already holds, and what it still owes (§2.5, §10)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from orchestra.config.errors import display_path
from orchestra.documents.enums import ErrorType, ExecutorKind, TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig, JobResult, ResumeRecord
from orchestra.documents.trial import TrialResult
from orchestra.errors import OrchestraError
from orchestra.jobs.aggregate import JobRecord
from orchestra.jobs.identity import differing_fields
from orchestra.jsonio import utc_timestamp
from orchestra.paths import JobPaths, RunPaths
from orchestra.plural import plural


class JobConfigMismatch(OrchestraError):
    """The job exists with another replay identity (exit 1)."""


def orchestrator_version() -> str:
    try:
        return version("buzz-orchestra")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class ExistingTrial:
    name: str
    path: Path
    result: TrialResult | None  # None: no readable result.json (the process died)


@dataclass
class Inventory:
    """Trials kept per slot, and the slots still owed, in plan order."""

    kept: dict[tuple[str, int], TrialResult] = field(default_factory=dict)
    owed: list[tuple[int, str]] = field(default_factory=list)  # (attempt, task name)
    superseded: list[str] = field(default_factory=list)


def scan_trials(paths: JobPaths) -> list[ExistingTrial]:
    """Every trial directory of the job; `DocumentError` when a `result.json` is malformed."""
    trials: list[ExistingTrial] = []
    if not paths.root.is_dir():
        return trials
    for child in sorted(paths.root.iterdir()):
        if not child.is_dir() or child.name.startswith("."):
            continue
        result = TrialResult.load_if_readable(paths.trial(child.name).result_json)
        trials.append(ExistingTrial(name=child.name, path=child, result=result))
    return trials


def supersede_directory(paths: JobPaths, trial_name: str) -> None:
    """Move a trial's directory to `.superseded/<trial name>`: replaced, never deleted."""
    target = paths.superseded(trial_name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(paths.trial(trial_name).root), str(target))


def plan_inventory(
    trials: list[ExistingTrial],
    slots: list[tuple[int, str]],
    *,
    keep_errors: bool,
    optional: Sequence[tuple[int, str]] = (),
) -> Inventory:
    """Which trials a resume keeps (scored, and errors with `keep_errors` but never an
    `OrchestratorLost`: it measured nothing; one per slot), which it supersedes and which slots
    it still owes; reads nothing, moves nothing (§2.5). An `optional` slot (a confirmation
    attempt) keeps its trial but is never owed."""
    inventory = Inventory()
    wanted = {(task, attempt) for attempt, task in [*slots, *optional]}
    kept_statuses = {TrialStatus.SCORED} | ({TrialStatus.ERROR} if keep_errors else set())
    for trial in trials:
        result = trial.result
        if (
            result is not None
            and result.status in kept_statuses
            and result.error_type != ErrorType.ORCHESTRATOR_LOST
            and result.slot in wanted
            and result.slot not in inventory.kept
        ):
            inventory.kept[result.slot] = result
        else:
            inventory.superseded.append(trial.name)
    inventory.owed = [(a, t) for a, t in slots if (t, a) not in inventory.kept]
    return inventory


def take_inventory(
    paths: JobPaths,
    slots: list[tuple[int, str]],
    *,
    keep_errors: bool,
    optional: Sequence[tuple[int, str]] = (),
) -> Inventory:
    """`plan_inventory` of the job's trials, then every superseded trial directory moved to
    `.superseded/`, never deleted. Every trial is read before anything moves, so a malformed
    one stops the resume with nothing changed."""
    trials = scan_trials(paths)
    inventory = plan_inventory(trials, slots, keep_errors=keep_errors, optional=optional)
    for name in inventory.superseded:
        supersede_directory(paths, name)
    return inventory


def open_job(
    paths: JobPaths,
    config: JobConfig,
    *,
    slots: list[tuple[int, str]],
    keep_errors: bool,
    executor: ExecutorKind = ExecutorKind.LOCAL,
    optional: Sequence[tuple[int, str]] = (),
) -> tuple[JobConfig, Inventory, bool]:
    """Create the job with `config`, or resume it when the replay identity matches (under any
    executor: it is not part of the identity, and each resume records its own).

    Returns (the job config as stored, the inventory, whether this is a resume).
    """
    existing = JobConfig.load_if_readable(paths.config_json)
    if existing is None:
        paths.root.mkdir(parents=True, exist_ok=True)
        config.write(paths.config_json)
        inventory = take_inventory(paths, slots, keep_errors=keep_errors, optional=optional)
        return config, inventory, False
    changed = differing_fields(existing.replay_identity, config.replay_identity)
    if changed:
        raise JobConfigMismatch(
            f"job {paths.name} exists with a different configuration ({', '.join(changed)}); "
            "choose another --job-name"
        )
    inventory = take_inventory(paths, slots, keep_errors=keep_errors, optional=optional)
    existing.resumes.append(
        ResumeRecord(at=utc_timestamp(), owed_trials=len(inventory.owed), executor=executor)
    )
    existing.write(paths.config_json)
    return existing, inventory, True


def load_job_config(paths: JobPaths) -> JobConfig:
    """The job's `config.json`; `DocumentError` when it is missing or malformed."""
    config = JobConfig.load_if_readable(paths.config_json)
    if config is None:
        raise _not_a_job(paths)
    return config


#: How many run or job names an error lists before "…".
LISTED_UNITS = 10


def _not_a_job(paths: JobPaths) -> DocumentError:
    """Why `paths.root` is not a readable job, and the runs and jobs it holds when it is a jobs
    dir. Callers detect a run directory (its `run.json`) before they read a job, so a directory
    that gets here is neither."""
    root = paths.root
    if not root.is_dir():
        return DocumentError(display_path(root), "", "no such run or job directory")
    if paths.config_json.exists():
        return DocumentError(display_path(paths.config_json), "", "not a JSON object")
    runs = [p.name for p in sorted(root.iterdir()) if RunPaths(p).run_json.is_file()]
    jobs = [p.name for p in sorted(root.iterdir()) if JobPaths(p).config_json.is_file()]
    units = sorted(runs + jobs)
    if not units:
        return DocumentError(
            display_path(root), "", "not a run or job directory (no run.json or config.json)"
        )
    held = " and ".join(
        plural(len(names), noun) for names, noun in ((runs, "run"), (jobs, "job")) if names
    )
    listed = ", ".join(units[:LISTED_UNITS]) + (", …" if len(units) > LISTED_UNITS else "")
    return DocumentError(
        display_path(root),
        "",
        f"a directory of {held}, not a run or job: {listed} "
        f"(name one, e.g. {display_path(root / units[-1])})",
    )


def load_job_record(job_dir: Path) -> JobRecord:
    """The job's plan and every trial result in it, read through the models (`DocumentError`
    naming the file and field when one is malformed)."""
    paths = JobPaths(job_dir)
    record = JobRecord.from_config(load_job_config(paths), job_dir)
    record.trials = [t.result for t in scan_trials(paths) if t.result is not None]
    result = JobResult.load_if_readable(paths.result_json)
    if result is not None:
        record.stopped, record.stop_message = result.stopped, result.stop_message
        record.spent_usd = result.spent_usd
    return record
