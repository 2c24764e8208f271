"""`orchestra regrade RUN` (orchestrator.md §2.6 "Regrade"): the current verifiers re-score a
finished run from its stored evidence, into a new run directory; no agent runs.

Each trial with evidence is copied (without its sandbox and its old verifier output) and its
verifier runs again over the stored evidence, the task's `tests/` as they are now and the
fixture files the trial rendered; its result keeps everything else. A trial without evidence
(an export that failed, a cancelled trial) and a Harbor task's (graded on the environment the
agents left, which is gone) keep their result as it was. The new run's `run.json` records
where it came from and each task's verifier digest, and its job plans carry the digests, so
`compare` says when two runs were graded by different verifiers.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from orchestra.config.errors import display_path
from orchestra.config.task import Task, load_task
from orchestra.documents.enums import Phase, TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig
from orchestra.documents.run import RegradeRecord, RunRecord
from orchestra.documents.trial import TrialConfig, TrialResult
from orchestra.errors import OrchestraError
from orchestra.jobs.layout import scan_trials
from orchestra.jobs.plan import JOB_STAMP_FORMAT, check_job_name
from orchestra.jobs.result import JobResultRecorder
from orchestra.jsonio import utc_timestamp
from orchestra.paths import JobPaths, RunPaths, TrialPaths
from orchestra.trial.errors import exception_info
from orchestra.verify.inputs import VerifierInputs
from orchestra.verify.local import run_local_verifier
from orchestra.verify.reward import VerifierFailure

#: what a regraded trial leaves behind: the agents' sandbox and the previous verdict
NOT_COPIED = ("sandbox", "verifier", "verifier-inputs")


class RegradeError(OrchestraError):
    """Bad input to `orchestra regrade`: one line naming the directory or file (exit 1)."""


@dataclass
class Regraded:
    """What the regrade did, for its summary lines."""

    run_dir: Path
    regraded: int = 0
    kept: list[str] = field(default_factory=list)  # "trial: why", trials kept as they were
    changed: list[str] = field(default_factory=list)  # "trial: old -> new"


def regraded_name(run_name: str, now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime(JOB_STAMP_FORMAT)
    return f"{run_name}-regraded-{stamp}"


def load_source(run_dir: Path) -> RunRecord:
    paths = RunPaths(run_dir)
    if not paths.run_json.is_file():
        raise RegradeError(f"{display_path(run_dir)}: not a run directory (no run.json)")
    try:
        return RunRecord.load(paths.run_json)
    except DocumentError as error:
        raise RegradeError(str(error)) from None


def _task_of(config: JobConfig, name: str, tasks: dict[str, Task]) -> Task:
    """The task as it is now, from the directory the job recorded."""
    if name not in tasks:
        record = next(task for task in config.plan.tasks if task.name == name)
        if not Path(record.dir).is_dir():
            raise RegradeError(f"{record.dir}: the directory of task {name} is gone")
        try:
            tasks[name] = load_task(Path(record.dir))
        except (OSError, OrchestraError, ValueError) as error:
            first = str(error).splitlines()[0]
            raise RegradeError(f"{record.dir}: cannot read task {name}: {first}") from None
    return tasks[name]


def _inputs(task: Task, source: TrialPaths) -> VerifierInputs:
    files = []
    for spec in task.fixture.files:
        record = source.fixture_file_record(spec.path)
        if not record.is_file():
            raise RegradeError(
                f"{display_path(record)}: the trial's rendered fixture file is missing"
            )
        files.append((spec.path, record.read_bytes(), spec.mode_bits))
    return VerifierInputs.assemble(
        evidence=source.evidence_json.read_bytes(), tests=task.tests, fixture_files=files
    )


async def _regrade_trial(
    task: Task, result: TrialResult, inputs: VerifierInputs, seconds: float, target: TrialPaths
) -> TrialResult:
    def log(line: str) -> None:
        with target.trial_log.open("a", encoding="utf-8") as trial_log:
            trial_log.write(f"regrade: {line}\n")

    try:
        run = await run_local_verifier(target, task.fixture.home, inputs, seconds, log)
    except VerifierFailure as failure:
        return result.model_copy(
            update={
                "status": TrialStatus.ERROR,
                "reward": None,
                "rewards": failure.rewards,
                "verifier": failure.verifier,
                "verifier_inputs": inputs.record(),
                "exception_info": exception_info(failure, Phase.VERIFY),
            }
        )
    return result.model_copy(
        update={
            "status": TrialStatus.SCORED,
            "reward": run.rewards["reward"],
            "rewards": run.rewards,
            "verifier": run.summary(),
            "verifier_inputs": inputs.record(),
            "exception_info": None,
        }
    )


def _why_kept(task: Task, result: TrialResult | None, source: TrialPaths) -> str | None:
    if result is None:
        return "no readable result.json"
    if task.is_harbor:
        return "a Harbor task is graded on the environment the agents left, which is gone"
    if not source.evidence_json.is_file():
        return "no stored evidence"
    return None


def regrade_run(
    run_dir: Path,
    *,
    jobs_dir: Path | None = None,
    run_name: str | None = None,
    say: Callable[[str], None] = lambda _line: None,
) -> Regraded:
    """Re-score `run_dir` into a new run directory; `RegradeError` on bad input."""
    # the verifier runs in its trial's directory: every path it is given must be absolute
    run_dir = run_dir.absolute()
    jobs_dir = None if jobs_dir is None else jobs_dir.absolute()
    source = load_source(run_dir)
    name = run_name or regraded_name(source.run_name)
    try:
        check_job_name(name, option="--run-name")
    except OrchestraError as error:
        raise RegradeError(str(error)) from None
    target = RunPaths((jobs_dir or run_dir.parent) / name)
    if target.root.exists():
        raise RegradeError(f"{display_path(target.root)} already exists (choose --run-name)")
    jobs = [job for job in source.jobs if RunPaths(run_dir).job(job.job_name).root.is_dir()]
    if not any(
        TrialPaths(trial.path).evidence_json.is_file()
        for job in jobs
        for trial in scan_trials(RunPaths(run_dir).job(job.job_name))
    ):
        raise RegradeError(f"{display_path(run_dir)}: no trial of this run has stored evidence")
    configs = {job.job_name: _job_config(RunPaths(run_dir).job(job.job_name)) for job in jobs}
    tasks: dict[str, Task] = {}
    for config in configs.values():  # every task readable before anything is written
        for record in config.plan.tasks:
            _task_of(config, record.name, tasks)
    outcome = Regraded(target.root)
    target.root.mkdir(parents=True)
    try:
        for job_name, config in configs.items():
            source_job, target_job = RunPaths(run_dir).job(job_name), target.job(job_name)
            _regrade_job(source_job, target_job, config, tasks, outcome, say)
    except BaseException:  # Ctrl-C above all: a half-regraded run is no run, the source is whole
        shutil.rmtree(target.root, ignore_errors=True)
        say(f"stopped: {display_path(target.root)} removed; {display_path(run_dir)} is unchanged")
        raise
    digests = {task_name: task.verifier_digest for task_name, task in sorted(tasks.items())}
    regraded_record = source.model_copy(
        update={
            "run_name": name,
            "id": str(uuid.uuid4()),
            "created_at": utc_timestamp(),
            "resumes": [],
            "regrade": RegradeRecord(
                from_run=str(run_dir.absolute()), at=utc_timestamp(), verifier_digests=digests
            ),
        }
    )
    regraded_record.write(target.run_json)
    return outcome


def _job_config(source: JobPaths) -> JobConfig:
    try:
        return JobConfig.load(source.config_json)
    except DocumentError as error:
        raise RegradeError(str(error)) from None


def _regrade_job(
    source: JobPaths,
    target: JobPaths,
    config: JobConfig,
    tasks: dict[str, Task],
    outcome: Regraded,
    say: Callable[[str], None],
) -> None:
    target.root.mkdir(parents=True)
    results: list[TrialResult] = []
    for trial in scan_trials(source):
        task_name = trial.result.task_name if trial.result is not None else None
        if task_name is None or task_name not in {t.name for t in config.plan.tasks}:
            outcome.kept.append(f"{trial.name}: not a trial of the job's plan")
            continue
        task = _task_of(config, task_name, tasks)
        source_paths, target_paths = TrialPaths(trial.path), target.trial(trial.name)
        why = _why_kept(task, trial.result, source_paths)
        left_out = ("sandbox",) if why is not None else NOT_COPIED
        shutil.copytree(trial.path, target_paths.root, ignore=_top_level(trial.path, left_out))
        result = before = trial.result
        assert result is not None and before is not None
        if why is None:
            timeout = TrialConfig.load(source_paths.config_json).timeouts.verifier_seconds
            inputs = _inputs(task, source_paths)
            result = asyncio.run(_regrade_trial(task, result, inputs, timeout, target_paths))
            outcome.regraded += 1
            if result.reward != before.reward:
                outcome.changed.append(f"{trial.name}: {before.reward} -> {result.reward}")
            say(f"regraded {trial.name}: reward {result.reward}")
        else:
            outcome.kept.append(f"{trial.name}: {why}")
        result.write(target_paths.result_json)
        results.append(result)
    plan = config.plan.model_copy(
        update={
            "tasks": [
                record.model_copy(update={"verifier_digest": tasks[record.name].verifier_digest})
                if record.name in tasks
                else record
                for record in config.plan.tasks
            ]
        }
    )
    regraded_config = config.model_copy(
        update={"id": str(uuid.uuid4()), "created_at": utc_timestamp(), "plan": plan}
    )
    regraded_config.write(target.config_json)
    recorder = JobResultRecorder(target, regraded_config, plan.n_trials)
    recorder.seed(results)
    recorder.write()


def _top_level(root: Path, names: tuple[str, ...]) -> Callable[[str, list[str]], set[str]]:
    """A `copytree` ignore that leaves out `names` directly under `root` only."""

    def ignore(directory: str, entries: list[str]) -> set[str]:
        return set(names) & set(entries) if Path(directory) == root else set()

    return ignore
