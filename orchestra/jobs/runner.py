"""Running one planned job: open or resume its directory, dispatch its trials (§2.3, §2.5, §7.5)."""

from __future__ import annotations

import asyncio
import functools
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from orchestra.config.condition import Condition
from orchestra.documents.enums import EnvKind, TrialStatus
from orchestra.documents.job import JobConfig, JobOptions, ManifestRecord, endpoint_records
from orchestra.documents.trial import RetriedAttempt, TrialResult
from orchestra.jobs.controls import RunControls, Stop
from orchestra.jobs.identity import replay_components, replay_record
from orchestra.jobs.layout import open_job, orchestrator_version
from orchestra.jobs.leftovers import claim_job, reap_job
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.result import JobResultRecorder
from orchestra.jobs.retries import retried, supersede
from orchestra.jsonio import utc_timestamp
from orchestra.paths import JobPaths
from orchestra.stack.images import task_images
from orchestra.stack.info import StackInfo
from orchestra.stack.readiness import StackError
from orchestra.stack.registry import Registry
from orchestra.stack.state import BenchmarkState
from orchestra.stack.watch import StackWatch
from orchestra.trial.context import JobContext, OracleHost, RunOptions
from orchestra.trial.env.docker import DockerKind
from orchestra.trial.env.local import LocalKind
from orchestra.trial.env.protocol import EnvironmentKind
from orchestra.trial.env.sandbox import SandboxSupport, local_launcher, sandbox_support
from orchestra.trial.relay_ops import ClientPool
from orchestra.trial.run import run_trial


class Progress(Protocol):
    """What the runner tells whoever shows progress (the CLI passes `report.progress`'s)."""

    def start_job(self, name: str, planned: int, kept: list[TrialResult]) -> None: ...

    def trial_update(self, result: TrialResult) -> None: ...

    def stopped(self, reason: str, message: str) -> None: ...

    def end_job(self) -> None: ...


class Interrupt:
    """SIGINT/SIGTERM: stop starting trials and cancel the ones in flight (§7.6)."""

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.hurry = asyncio.Event()  # the second signal: no more grace periods
        self.running: set[asyncio.Task[Any]] = set()

    def trigger(self) -> None:
        if self.requested.is_set():
            # In-flight trials are already stopping and their results must still be written;
            # a second signal only skips the waiting (§7.6).
            self.hurry.set()
            return
        self.requested.set()
        for task in list(self.running):
            task.cancel()


@dataclass
class Settings:
    """Everything the command line decided, shared by the jobs of one plan."""

    condition: Condition
    environment: str
    stack: StackInfo
    state: BenchmarkState
    options: RunOptions
    api_keys: dict[str, str]
    jobs_dir: Path
    n_concurrent: int
    keep_errors: bool
    relay_port: int
    endpoint_config_path: Path
    oracle: OracleHost = field(default_factory=OracleHost)
    #: the jobs directory that holds the run (`jobs_dir`): hidden, with every run in it, from
    #: sandboxed agents; None: `jobs_dir` itself
    jobs_root: Path | None = None
    sandbox: SandboxSupport = field(default_factory=sandbox_support)
    watch: StackWatch = field(default_factory=StackWatch)
    controls: RunControls = field(default_factory=RunControls)


@dataclass
class JobOutcome:
    name: str
    path: Path
    results: list[TrialResult]
    interrupted: bool
    stop: Stop | None = None  # the run was stopped early (cost cap, circuit breaker)

    def count(self, status: TrialStatus) -> int:
        return sum(1 for r in self.results if r.status is status)


async def environment_kind(settings: Settings, planned: PlannedJob) -> EnvironmentKind:
    """How each trial of the job gets its environment and verifier (§5.8); the one place env
    kinds plug in.

    docker env: every selected task's agent layer is built (or found by its digest tag) here,
    before any trial; a failed build is a preflight failure (exit 2) naming the task.
    """
    bin_dir = settings.options.buzz_bin_dir
    if settings.environment == "local":
        hidden = [settings.state.paths.root, settings.jobs_root or settings.jobs_dir]
        socket_dir = settings.stack.database_socket_dir
        hidden += [socket_dir] if socket_dir is not None else []
        return LocalKind(bin_dir, local_launcher(settings.sandbox, bin_dir, hidden=hidden))
    return DockerKind(
        await task_images(settings.state.paths, planned.tasks),
        job_name=planned.name,
        overrides=settings.condition.manifest.environment,
        buzz_bin_dir=bin_dir,
        keep_containers=settings.options.keep_containers,
    )


def job_config(planned: PlannedJob, settings: Settings) -> JobConfig:
    """The `config.json` of a new job (§10.2); a resume keeps the stored one's id and dates."""
    condition = settings.condition
    components = replay_components(condition, settings.environment, planned.attempts, planned.tasks)
    options = settings.options
    return JobConfig(
        job_name=planned.name,
        id=str(uuid.uuid4()),
        created_at=utc_timestamp(),
        orchestrator_version=orchestrator_version(),
        replay_identity=replay_record(components),
        plan=planned.plan_record(),
        manifest=ManifestRecord(
            path=condition.manifest_path.absolute().as_posix(),
            sha256=condition.manifest_sha256,
            condition=condition.name,
            normalized=condition.manifest.normalized(),
        ),
        endpoints=endpoint_records(condition.used_endpoints()),
        stack=settings.stack.config_record(),
        environment=EnvKind(settings.environment),
        options=JobOptions(
            n_concurrent=settings.n_concurrent,
            timeout_multiplier=options.timeout_multiplier,
            keep_channels=options.keep_channels,
            jobs_dir=settings.jobs_dir.absolute().as_posix(),
            state_dir=settings.state.paths.root.absolute().as_posix(),
            relay_port=settings.relay_port,
            buzz_bin_dir=options.buzz_bin_dir.as_posix() if options.buzz_bin_dir else None,
            keep_containers=options.keep_containers,
            settle_ms=options.settle_ms,
            endpoint_config=settings.endpoint_config_path.absolute().as_posix(),
            artifact_root=condition.artifact_root.as_posix(),
        ),
    )


async def run_job(
    planned: PlannedJob, settings: Settings, progress: Progress, interrupt: Interrupt
) -> JobOutcome:
    paths = JobPaths.of(settings.jobs_dir, planned.name)
    lock = claim_job(paths)
    try:
        return await _run_claimed_job(planned, settings, progress, interrupt, paths)
    finally:
        lock.release()


async def _run_claimed_job(
    planned: PlannedJob,
    settings: Settings,
    progress: Progress,
    interrupt: Interrupt,
    paths: JobPaths,
) -> JobOutcome:
    environments = await environment_kind(settings, planned)
    log = functools.partial(_append, paths.job_log)
    await reap_job(paths, log)  # trials an orchestrator that died left running
    slots = [(attempt, task.name) for attempt, task in planned.slots()]
    config, inventory, _ = open_job(
        paths, job_config(planned, settings), slots=slots, keep_errors=settings.keep_errors
    )
    controls = settings.controls
    result = JobResultRecorder(paths, config, planned.n_trials, controls)
    result.seed(inventory.kept.values())
    result.write()
    tasks_by_name = {task.name: task for task in planned.tasks}
    registry = Registry(settings.stack.database_url)
    await registry.open()
    stable_clients = ClientPool(settings.stack.relay_ws_url)
    watch = settings.watch
    watch.after_restart.append(registry.reopen)
    watch.listeners.append(log)

    def stop_run(stop: Stop | None) -> None:
        if stop is None:
            return
        ctx.log(f"stopped ({stop.reason}): {stop.message}; no new trials")
        progress.stopped(stop.reason, stop.message)
        if stop.reason == "cost_cap" and controls.cost_cap.hard:
            for task in list(interrupt.running):
                task.cancel()
        result.write()

    def on_update(trial_result: TrialResult) -> None:
        result.update(trial_result)
        progress.trial_update(trial_result)
        if trial_result.status.terminal:
            stop_run(controls.trial_finished(trial_result))

    def on_live_cost(trial_name: str, cost_usd: float) -> None:
        stop_run(controls.live_cost(trial_name, cost_usd))

    ctx = JobContext(
        job_name=planned.name,
        job_paths=paths,
        condition=settings.condition,
        stack=settings.stack,
        environments=environments,
        state=settings.state,
        options=settings.options,
        api_keys=settings.api_keys,
        stable_clients=stable_clients,
        registry=registry,
        oracle=settings.oracle,
        log=log,
        on_trial_update=on_update,
        on_live_cost=on_live_cost,
        hurry=interrupt.hurry,
        watch=watch,
    )
    progress.start_job(planned.name, planned.n_trials, list(inventory.kept.values()))
    ctx.log(
        f"job {planned.name}: {len(inventory.owed)} trial(s) owed, "
        f"{len(inventory.superseded)} superseded"
    )
    slots_free = asyncio.Semaphore(settings.n_concurrent)
    finished: list[TrialResult] = list(inventory.kept.values())

    async def run_one(attempt: int, task_name: str) -> None:
        try:
            earlier: list[RetriedAttempt] = []
            while True:
                trial = await run_trial(ctx, tasks_by_name[task_name], attempt, earlier)
                if len(earlier) >= controls.retries or controls.stop or not retried(trial):
                    break
                if not await watch.usable():  # a rerun waits for a restarting stack
                    break
                earlier.append(supersede(paths, trial))
                result.forget(trial.trial_name)
                ctx.log(f"trial {trial.trial_name}: {trial.error_type}; rerunning the slot")
            finished.append(trial)
        except Exception as error:  # a trial that cannot even write its record
            ctx.log(f"trial of {task_name} #{attempt} failed: {type(error).__name__}: {error}")
        finally:
            slots_free.release()

    try:
        async with asyncio.TaskGroup() as group:
            for attempt, task_name in inventory.owed:
                await slots_free.acquire()
                # a stack being restarted starts no trial; one that cannot come back, none
                stopped = interrupt.requested.is_set() or controls.stop is not None
                if stopped or not await watch.usable():
                    slots_free.release()
                    break
                task = group.create_task(run_one(attempt, task_name))
                interrupt.running.add(task)
                task.add_done_callback(interrupt.running.discard)
    finally:
        watch.after_restart.remove(registry.reopen)
        watch.listeners.remove(log)
        if settings.oracle.server is not None:
            ctx.log(
                f"oracle: {settings.oracle.server.unauthorized_requests} unauthorized request(s)"
            )
        progress.end_job()
        await stable_clients.close()
        await registry.close()
        result.write()
    if watch.failure is not None:  # the command prints how to resume the run
        raise StackError(f"stack unavailable: {watch.failure}")
    return JobOutcome(
        planned.name, paths.root, finished, interrupt.requested.is_set(), controls.stop
    )


def _append(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{utc_timestamp()} {line}\n")
