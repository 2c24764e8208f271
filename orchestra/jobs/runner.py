"""Running one planned job: open or resume its directory, dispatch its trials (§2.3, §2.5, §7.5)."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from orchestra.documents.enums import ExecutorKind, TrialStatus
from orchestra.documents.job import JobConfig, ManifestRecord, endpoint_records
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import RetriedAttempt, TrialResult
from orchestra.jobs.controls import RunState, Stop
from orchestra.jobs.executor import Executor, JobTrials, LocalExecutor
from orchestra.jobs.identity import replay_components, replay_record
from orchestra.jobs.layout import open_job, orchestrator_version
from orchestra.jobs.leftovers import claim_job, reap_job
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.result import JobResultRecorder
from orchestra.jobs.retries import supersede, will_rerun
from orchestra.jobs.services import JobHooks, JobServices
from orchestra.jsonio import naming, utc_timestamp
from orchestra.paths import JobPaths
from orchestra.stack.readiness import StackError
from orchestra.stack.watch import StackWatch


class Progress(Protocol):
    """What the runner tells whoever shows progress (the CLI passes `report.progress`'s)."""

    def start_job(
        self, name: str, planned: int, kept: list[TrialResult], *, attempts: int | None = None
    ) -> None: ...

    def trial_update(self, result: TrialResult) -> None: ...

    def rerunning(self, result: TrialResult, rerun: int, reruns: int) -> None: ...

    def provider_retrying(self, trial_name: str, detail: str) -> None: ...

    def activity(self, trial_name: str, text: str) -> None: ...

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
class JobOutcome:
    name: str
    path: Path
    results: list[TrialResult]
    interrupted: bool
    stop: Stop | None = None  # the run was stopped early (cost cap, circuit breaker)

    def count(self, status: TrialStatus) -> int:
        return sum(1 for r in self.results if r.status is status)


def job_config(
    planned: PlannedJob,
    services: JobServices,
    config: RunConfig,
    executor: ExecutorKind = ExecutorKind.LOCAL,
) -> JobConfig:
    """The `config.json` of a new job (§10.2); a resume keeps the stored one's id and dates."""
    condition = services.condition
    components = replay_components(condition, services.environment, planned.attempts, planned.tasks)
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
        stack=services.stack.config_record(),
        environment=services.environment,
        options=config,
        executor=executor,
    )


class Confirmation(Protocol):
    """Extra attempts of a task that regressed against a baseline (docs/decisions.md D88): the run
    layer decides (it compares); the runner runs what it is told, in the same job."""

    def slots(self, planned: PlannedJob) -> list[tuple[int, str]]:
        """Every confirmation slot the job may hold: a resume keeps their trials."""
        ...

    def next_slots(self, planned: PlannedJob, finished: list[TrialResult]) -> list[tuple[int, str]]:
        """The confirmation attempts to run now (none: every verdict is in)."""
        ...


@dataclass
class RunShare:
    """What the jobs of one run share besides their services: its configs, its mutable state
    and the confirmation reruns it asks for. The runner reads the `effective` config (the
    command's options: `-n`, `--retries`, `--keep-errors`, ...); a new job's `config.json`
    records the `stored` one, as the run's `run.json` does."""

    effective: RunConfig
    stored: RunConfig
    state: RunState
    confirmation: Confirmation | None = None


async def run_job(
    planned: PlannedJob,
    services: JobServices,
    run: RunShare,
    progress: Progress,
    interrupt: Interrupt,
    executor: Executor | None = None,
) -> JobOutcome:
    """Run the job's owed trials through `executor` (default: in this process)."""
    paths = JobPaths.of(services.jobs_dir, planned.name)
    lock = claim_job(paths)
    try:
        return await _run_claimed_job(
            planned, services, run, progress, interrupt, paths, executor or LocalExecutor()
        )
    finally:
        lock.release()


async def _run_claimed_job(
    planned: PlannedJob,
    services: JobServices,
    run: RunShare,
    progress: Progress,
    interrupt: Interrupt,
    paths: JobPaths,
    executor: Executor,
) -> JobOutcome:
    log = functools.partial(_append, paths.job_log)
    await reap_job(paths, log)  # trials an orchestrator that died left running
    slots = [(attempt, task.name) for attempt, task in planned.slots()]
    confirmation_slots = run.confirmation.slots(planned) if run.confirmation else []
    controls = run.state
    result: JobResultRecorder  # set once the executor is open; the hooks run only after that

    def stop_run(stop: Stop | None) -> None:
        if stop is None:
            return
        log(f"stopped ({stop.reason}): {stop.message}; no new trials")
        progress.stopped(stop.reason, stop.message)
        if stop.reason == "cost_cap" and controls.cost_cap.hard:
            for task in list(interrupt.running):
                task.cancel()
        result.write()

    def on_update(trial_result: TrialResult) -> None:
        result.update(trial_result)
        if not trial_result.status.terminal:
            progress.trial_update(trial_result)
            return
        stop = controls.trial_finished(trial_result)
        retries = run.effective.retries
        if will_rerun(trial_result, retries, controls.stop is not None):
            # not the slot's final line: the counts keep the slot running
            progress.rerunning(trial_result, len(trial_result.retried_from) + 1, retries)
        else:
            progress.trial_update(trial_result)
        stop_run(stop)

    def on_live_cost(trial_name: str, cost_usd: float) -> None:
        stop_run(controls.live_cost(trial_name, cost_usd))

    def on_fault(error: OSError) -> None:
        controls.fault = controls.fault or error
        if not interrupt.requested.is_set():
            interrupt.trigger()

    hooks = JobHooks(
        log, on_update, on_live_cost, interrupt.hurry, progress.provider_retrying, progress.activity
    )
    # The executor opens before the job's documents: the docker env builds the task images
    # there, and a failed build is a preflight error (exit 2) that leaves no job result behind.
    async with executor.open_job(services, planned, hooks) as trials:
        config, inventory, _ = open_job(
            paths,
            job_config(planned, services, run.stored, executor.kind),
            slots=slots,
            keep_errors=run.effective.keep_errors,
            executor=executor.kind,
            optional=confirmation_slots,
        )
        result = JobResultRecorder(
            paths,
            config,
            planned.n_trials,
            controls,
            schedule=asyncio.get_running_loop().call_later,
            on_fault=on_fault,
        )
        result.seed(inventory.kept.values())
        result.write()
        finished: list[TrialResult] = list(inventory.kept.values())
        progress.start_job(
            planned.name,
            planned.n_trials,
            list(inventory.kept.values()),
            attempts=planned.attempts,
        )
        log(
            f"job {planned.name}: {len(inventory.owed)} trial(s) owed, "
            f"{len(inventory.superseded)} superseded"
        )
        try:
            dispatch = Dispatch(
                planned, services.watch, run, paths, trials, result, log, progress.trial_update
            )
            going = await dispatch.run(inventory.owed, interrupt, finished.append)
            while going and run.confirmation is not None:
                more = run.confirmation.next_slots(planned, finished)
                if not more:
                    break
                log(f"confirmation attempts: {', '.join(f'{t} #{a}' for a, t in more)}")
                going = await dispatch.run(more, interrupt, finished.append)
        finally:
            progress.end_job()
            result.write()
    if services.watch.failure is not None:  # the command prints how to resume the run
        raise StackError(f"stack unavailable: {services.watch.failure}")
    return JobOutcome(
        planned.name, paths.root, finished, interrupt.requested.is_set(), controls.stop
    )


@dataclass
class Dispatch:
    """Every owed slot through the executor, at most `n_concurrent` at once (§7.5), each rerun
    after a harness error as the run's controls allow."""

    planned: PlannedJob
    watch: StackWatch
    shared: RunShare
    paths: JobPaths
    trials: JobTrials
    result: JobResultRecorder
    log: Callable[[str], None]
    #: shows a slot's final result (again: only the first showing of a status prints)
    final: Callable[[TrialResult], None]

    async def run(
        self,
        owed: list[tuple[int, str]],
        interrupt: Interrupt,
        done: Callable[[TrialResult], None],
    ) -> bool:
        """Run `owed`; False when the run stopped starting trials (interrupt, stop, stack)."""
        controls, watch = self.shared.state, self.watch
        going = True
        slots_free = asyncio.Semaphore(self.shared.effective.n_concurrent)

        async def run_one(attempt: int, task_name: str) -> None:
            try:
                done(await self.slot(attempt, task_name))
            except Exception as error:  # a trial that cannot even write its record
                self.log(f"trial of {task_name} #{attempt} failed: {type(error).__name__}: {error}")
            finally:
                slots_free.release()

        async with asyncio.TaskGroup() as group:
            for attempt, task_name in owed:
                await slots_free.acquire()
                # a stack being restarted starts no trial; one that cannot come back, none
                stopped = interrupt.requested.is_set() or controls.stop is not None
                if stopped or not await watch.usable():
                    slots_free.release()
                    going = False
                    break
                task = group.create_task(run_one(attempt, task_name))
                interrupt.running.add(task)
                task.add_done_callback(interrupt.running.discard)
        return going and not interrupt.requested.is_set() and controls.stop is None

    async def slot(self, attempt: int, task_name: str) -> TrialResult:
        """One planned slot: its trial, rerun while it ends in a retried harness error."""
        controls, watch = self.shared.state, self.watch
        task = next(task for task in self.planned.tasks if task.name == task_name)
        earlier: list[RetriedAttempt] = []
        while True:
            trial = await self.trials.run(task, attempt, earlier)
            retries = self.shared.effective.retries
            # counted here too: a result that does not list its earlier attempts must not make
            # the slot rerun for ever
            rerun = len(earlier) < retries and will_rerun(trial, retries, controls.stop is not None)
            # a rerun waits for a restarting stack
            if not rerun or not await watch.usable():
                self.final(trial)  # a rerun announced when the trial ended did not happen
                return trial
            earlier.append(supersede(self.paths, trial))
            self.result.forget(trial.trial_name)
            self.log(f"trial {trial.trial_name}: {trial.error_type}; rerunning the slot")


def _append(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"{utc_timestamp()} {line}\n")
    except OSError as error:
        raise naming(error, path) from None
