"""`orchestra benchmark` and `orchestra resume`: preflight, stack, jobs, summary (§2.3-§2.5)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from orchestra.cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PREFLIGHT,
    EXIT_TRIAL_ERRORS,
    EXIT_USAGE,
    error_lines,
)
from orchestra.config.condition import Condition, condition_problems, load_condition
from orchestra.config.endpoints import resolve_api_key
from orchestra.config.errors import ConfigError
from orchestra.config.task import Layer, load_task
from orchestra.documents.enums import SandboxKind, StackMode, TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig, JobResult
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.identity import differing_fields, replay_components, replay_record
from orchestra.jobs.layout import (
    JobConfigMismatch,
    load_job_config,
    load_job_record,
    scan_trials,
)
from orchestra.jobs.leftovers import JobInUse, check_job_free, reap_jobs_dir
from orchestra.jobs.plan import (
    Plan,
    PlannedJob,
    Selection,
    dataset_path,
    discover_tasks,
    job_base_name,
    plan_jobs,
    render_dry_run,
    select_tasks,
)
from orchestra.jobs.runner import Interrupt, JobOutcome, Settings, run_job
from orchestra.paths import JobPaths
from orchestra.report.progress import Progress
from orchestra.report.render import render_summary
from orchestra.stack.info import scripts_dir
from orchestra.stack.readiness import StackError
from orchestra.stack.select import ModeError, Modes, choose_modes, running_stack
from orchestra.stack.state import StateError, load_state
from orchestra.stack.watch import HealableStack, StackWatch
from orchestra.trial.context import RunOptions
from orchestra.trial.env.sandbox import sandbox_support

AGENT_PROGRAMS = ("buzz-acp", "buzz-agent", "buzz-dev-mcp")
SUMMARY_WIDTH = 180
UNSAFE_PATH_CHARS = re.compile(r"""[\s'"$\\`;&|<>()*?\[\]{}!]""")


class Preflight(Exception):
    """A preflight failure: exit 2 with the message."""


@dataclass(frozen=True)
class BenchmarkOptions:
    path: Path | None
    dataset: str | None
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    layer: Layer | None
    attempts: int | None
    manifest: Path
    endpoint_config: Path
    n_concurrent: int
    jobs_dir: Path
    job_name: str | None
    dry_run: bool
    stack: str
    env: str
    relay_url: str | None
    database_url: str | None
    relay_port: int
    buzz_bin_dir: Path | None
    state_dir: Path
    artifact_root: Path | None
    timeout_multiplier: float
    keep_channels: bool
    keep_containers: bool
    fresh: bool
    keep_errors: bool
    quiet: bool
    report: bool = False


def _config_errors(error: ConfigError) -> None:
    error_lines("\n".join(str(single) for single in error.errors))


def run_benchmark_command(opts: BenchmarkOptions) -> int:
    try:
        selection = Selection(
            dataset_path(opts.path, opts.dataset), opts.layer, opts.include, opts.exclude
        )
        selected, warnings = select_tasks(discover_tasks(selection.path), selection)
        condition = load_condition(
            opts.manifest, opts.endpoint_config, opts.artifact_root, verify=False
        )
        plan = Plan(
            selection,
            plan_jobs(selected, opts.attempts, job_base_name(condition.name, opts.job_name)),
            tuple(warnings),
        )
        modes = choose_modes(opts.stack, opts.env, opts.relay_url)
    except ConfigError as error:
        _config_errors(error)
        return EXIT_USAGE
    except ModeError as error:
        error_lines(str(error))
        return EXIT_USAGE
    problems = condition_problems(condition)
    if opts.dry_run:
        if problems:
            error_lines("\n".join(map(str, problems)))
            return EXIT_USAGE
        print(
            render_dry_run(
                plan, condition, stack_mode=modes.stack, env_mode=modes.env, environ=os.environ
            ),
            end="",
        )
        return EXIT_OK
    for warning in plan.warnings:
        Console(stderr=True).print(f"warning: {warning}")
    if problems:
        error_lines("\n".join(map(str, problems)))
        return EXIT_PREFLIGHT
    options = RunOptions(
        opts.timeout_multiplier, opts.keep_channels, opts.buzz_bin_dir, opts.keep_containers
    )
    return _run_plan(
        list(plan.jobs),
        condition,
        modes,
        options,
        jobs_dir=opts.jobs_dir,
        state_dir=opts.state_dir,
        relay_port=opts.relay_port,
        relay_url=opts.relay_url,
        database_url=opts.database_url,
        n_concurrent=opts.n_concurrent,
        keep_errors=opts.keep_errors,
        quiet=opts.quiet,
        report=opts.report,
        fresh=opts.fresh,
    )


def run_resume_command(
    job_dir: Path,
    *,
    n_concurrent: int,
    keep_errors: bool,
    endpoint_config: Path | None,
    stack: str,
    env: str,
    relay_url: str | None,
    database_url: str | None,
    relay_port: int | None,
    state_dir: Path | None,
    quiet: bool,
) -> int:
    try:
        config = load_job_config(JobPaths(job_dir))
        stored = config.options
        condition = load_condition(
            Path(config.manifest.path),
            endpoint_config or Path(stored.endpoint_config),
            Path(stored.artifact_root),
            verify=False,
        )
        tasks = tuple(load_task(Path(task.dir)) for task in config.plan.tasks)
        job = PlannedJob(config.job_name, config.plan.layer, config.plan.attempts, tasks)
        # A resumed job keeps the stack and environment it started with unless told otherwise.
        if env == "auto":
            env = config.environment.value
        if stack == "auto" and relay_url is None and config.stack.mode is not StackMode.EXTERNAL:
            stack = config.stack.mode.value
        modes = choose_modes(stack, env, relay_url)
    except ConfigError as error:  # a malformed config.json is a DocumentError, a ConfigError
        _config_errors(error)
        return EXIT_USAGE
    except ModeError as error:
        error_lines(str(error))
        return EXIT_USAGE
    problems = condition_problems(condition)
    if problems:
        error_lines("\n".join(map(str, problems)))
        return EXIT_PREFLIGHT
    options = RunOptions(
        stored.timeout_multiplier,
        stored.keep_channels,
        Path(stored.buzz_bin_dir) if stored.buzz_bin_dir else None,
        stored.keep_containers,
    )
    return _run_plan(
        [job],
        condition,
        modes,
        options,
        jobs_dir=job_dir.absolute().parent,
        state_dir=state_dir or Path(stored.state_dir),
        relay_port=relay_port or stored.relay_port,
        relay_url=relay_url,
        database_url=database_url,
        n_concurrent=n_concurrent,
        keep_errors=keep_errors,
        quiet=quiet,
    )


# --- preflight --------------------------------------------------------------------------------


def _api_keys(condition: Condition) -> dict[str, str]:
    keys: dict[str, str] = {}
    missing = []
    for name, endpoint in condition.used_endpoints().items():
        if endpoint.api_key_env is None:
            continue
        value = resolve_api_key(endpoint.api_key_env, os.environ)
        if value is None:
            missing.append(f"{endpoint.api_key_env} is not set (endpoint {name})")
        else:
            keys[endpoint.api_key_env] = value
    if missing:
        raise Preflight("\n".join(missing))
    return keys


def _check_programs(buzz_bin_dir: Path | None) -> None:
    directory = buzz_bin_dir or scripts_dir()
    missing = [
        name
        for name in AGENT_PROGRAMS
        if not ((directory / name).is_file() and os.access(directory / name, os.X_OK))
    ]
    if missing:
        raise Preflight(f"{directory}: missing executable {', '.join(missing)}")


def _check_jobs_dir(jobs_dir: Path) -> None:
    if UNSAFE_PATH_CHARS.search(str(jobs_dir.absolute())):
        raise Preflight(
            f"jobs dir {jobs_dir.absolute()} contains whitespace or shell metacharacters; "
            "the local verifier substitutes it into a shell script"
        )


def _check_resumable(
    jobs: list[PlannedJob], condition: Condition, env: str, jobs_dir: Path
) -> None:
    """Refuse before anything starts: a job that exists with another identity, or whose
    documents do not load (`DocumentError` naming the file and field)."""
    for job in jobs:
        paths = JobPaths.of(jobs_dir, job.name)
        stored = JobConfig.load_if_readable(paths.config_json)
        if stored is None:
            continue
        current = replay_record(replay_components(condition, env, job.attempts, job.tasks))
        changed = differing_fields(stored.replay_identity, current)
        if changed:
            raise JobConfigMismatch(
                f"job {job.name} exists with a different configuration ({', '.join(changed)}); "
                "choose another --job-name"
            )
        JobResult.load_if_readable(paths.result_json)
        scan_trials(paths)
        check_job_free(paths)


# --- running ----------------------------------------------------------------------------------


def _run_plan(
    jobs: list[PlannedJob],
    condition: Condition,
    modes: Modes,
    options: RunOptions,
    *,
    jobs_dir: Path,
    state_dir: Path,
    relay_port: int,
    relay_url: str | None,
    database_url: str | None,
    n_concurrent: int,
    keep_errors: bool,
    quiet: bool,
    report: bool = False,
    fresh: bool = False,
) -> int:
    try:
        _check_resumable(jobs, condition, modes.env, jobs_dir)
    except (JobConfigMismatch, DocumentError) as error:
        error_lines(str(error))
        return EXIT_USAGE
    except JobInUse as error:
        error_lines(str(error))
        return EXIT_PREFLIGHT
    try:
        api_keys = _api_keys(condition)
        _check_programs(options.buzz_bin_dir)
        _check_jobs_dir(jobs_dir)
        state = load_state(state_dir)
    except (Preflight, StateError) as error:
        error_lines(str(error))
        return EXIT_PREFLIGHT
    console = Console()
    sandbox = sandbox_support()
    if modes.env == "local" and sandbox.kind is SandboxKind.NONE:
        print(sandbox.warning(), file=sys.stderr)  # one line, whatever the terminal's width
    if condition.is_oracle:
        console.print(
            "[yellow]oracle condition: agents replay the reference solutions; "
            "scores measure the pipeline, not a model[/yellow]"
        )

    async def run() -> tuple[list[JobOutcome], bool]:
        interrupt = Interrupt()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, interrupt.trigger)
        outcomes: list[JobOutcome] = []
        for note in await reap_jobs_dir(jobs_dir, skip={job.name for job in jobs}):
            console.print(f"reaped a dead run's leftovers: {note}", markup=False)
        async with (
            running_stack(
                modes,
                state,
                relay_port=relay_port,
                relay_url=relay_url,
                database_url=database_url,
                fresh=fresh,
            ) as stack,
            watching(stack) as watch,
        ):
            settings = Settings(
                condition=condition,
                environment=modes.env,
                stack=stack.info,
                state=state,
                options=options,
                api_keys=api_keys,
                jobs_dir=jobs_dir,
                n_concurrent=n_concurrent,
                keep_errors=keep_errors,
                relay_port=relay_port,
                endpoint_config_path=condition.endpoint_config.path,
                sandbox=sandbox,
                watch=watch,
            )
            progress = Progress(console, quiet=quiet)
            try:
                for job in jobs:
                    outcome = await run_job(job, settings, progress, interrupt)
                    outcomes.append(outcome)
                    if (
                        outcome.interrupted
                        or outcome.count(TrialStatus.SCORED) + outcome.count(TrialStatus.ERROR)
                        < job.n_trials
                    ):
                        break
            finally:
                await settings.oracle.stop()
        return outcomes, interrupt.requested.is_set()

    try:
        outcomes, interrupted = asyncio.run(run())
    except (StackError, JobInUse) as error:
        error_lines(str(error))
        return EXIT_PREFLIGHT
    except (JobConfigMismatch, DocumentError) as error:
        error_lines(str(error))
        return EXIT_USAGE
    _print_summary(console, outcomes)
    if report:
        _write_reports(console, outcomes)
    return _exit_code(outcomes, interrupted, sum(job.n_trials for job in jobs))


@asynccontextmanager
async def watching(stack: HealableStack) -> AsyncIterator[StackWatch]:
    """The stack watched (and healed) while the jobs run; the watch ends before the stack
    is stopped, which is no death."""
    watch = StackWatch(stack)
    watch.listeners.append(lambda line: print(f"warning: {line}", file=sys.stderr, flush=True))
    task = asyncio.create_task(watch.run(), name="stack-watch")
    try:
        yield watch
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _print_summary(console: Console, outcomes: list[JobOutcome]) -> None:
    if not outcomes:
        return
    records = [load_job_record(outcome.path) for outcome in outcomes]
    console.print()
    # a summary table is read, not glanced at: never squeeze it below its natural width
    wide = Console(width=max(console.width, SUMMARY_WIDTH), soft_wrap=True)
    render_summary(aggregate(records), wide)


def _write_reports(console: Console, outcomes: list[JobOutcome]) -> None:
    from orchestra.cli.report_commands import write_reports

    for outcome in outcomes:
        files = write_reports([outcome.path], outcome.path)
        console.print(f"reports: {files.report_json}, {files.junit_xml}, {files.report_html}")


def _exit_code(outcomes: list[JobOutcome], interrupted: bool, planned: int) -> int:
    if interrupted:
        return EXIT_INTERRUPTED
    results = [r for o in outcomes for r in o.results]
    if any(r.status is not TrialStatus.SCORED for r in results) or len(results) < planned:
        return EXIT_TRIAL_ERRORS
    return EXIT_OK
