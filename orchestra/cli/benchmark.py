"""`orchestra benchmark`: the run it starts or resumes, preflight, stack, jobs, summary (§2.3-§2.5);
`run_plan` also runs what `orchestra resume` (cli/resume.py) re-opens."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import sys
from dataclasses import dataclass, field
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
from orchestra.cli.execution import (
    Execution,
    driver_stack,
    dry_run_text,
    start_executor,
    stop_executor,
)
from orchestra.cli.runs import (
    Invocation,
    Unit,
    resume_command,
    storable_database_url,
)
from orchestra.cli.terminal import output_console, print_summary
from orchestra.config.condition import Condition, condition_problems, load_condition
from orchestra.config.endpoints import resolve_api_key
from orchestra.config.errors import ConfigError, display_path
from orchestra.config.task import Layer
from orchestra.documents.enums import SandboxKind, StackMode, TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig, JobResult
from orchestra.documents.run import RunSettings
from orchestra.errors import OrchestraError
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.controls import RunControls
from orchestra.jobs.cost_estimate import estimate_cost
from orchestra.jobs.endpoint_probe import probe_endpoints
from orchestra.jobs.executor import Executor
from orchestra.jobs.identity import differing_fields, replay_components, replay_record
from orchestra.jobs.layout import JobConfigMismatch, scan_trials
from orchestra.jobs.leftovers import JobInUse, check_job_free, reap_jobs_dir
from orchestra.jobs.plan import (
    Plan,
    PlannedJob,
    Selection,
    dataset_path,
    discover_tasks,
    render_dry_run,
    select_tasks,
)
from orchestra.jobs.run import RunRequest, choose_run
from orchestra.jobs.runner import Interrupt, JobOutcome, run_job
from orchestra.jobs.services import Settings
from orchestra.paths import JobPaths
from orchestra.report.power import dry_run_power_text
from orchestra.report.progress import Progress
from orchestra.stack.embedded import EmbeddedStack
from orchestra.stack.info import scripts_dir
from orchestra.stack.readiness import StackError
from orchestra.stack.select import ModeError, Modes, check_docker, choose_modes
from orchestra.stack.state import BenchmarkState, StateError, load_state
from orchestra.streams import when_stdout_gone
from orchestra.trial.context import RunOptions
from orchestra.trial.env.local_image import LocalImageError, read_local_image
from orchestra.trial.env.sandbox import sandbox_support

#: A closed terminal (SIGHUP) stops a run as Ctrl-C and SIGTERM do (§2.4 exit 130).
INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
AGENT_PROGRAMS = ("buzz-acp", "buzz-agent", "buzz-dev-mcp")
UNSAFE_PATH_CHARS = re.compile(r"""[\s'"$\\`;&|<>()*?\[\]{}!]""")


class Preflight(Exception):
    """A preflight failure: exit 2 with the message."""


class MissingKeys(Preflight):
    """A roster endpoint's API-key variable is not set."""


class Refused(Exception):
    """A check failed before anything started: the exit code and the message."""

    def __init__(self, code: int, message: str, *, missing_keys: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.missing_keys = missing_keys


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
    settle_ms: int
    fresh: bool
    keep_errors: bool
    quiet: bool
    report: bool = False
    run_name: str | None = None
    new_run: bool = False
    allow_missing_keys: bool = False
    #: the live endpoint check: before a real run unless skipped; in a dry run when asked
    check_endpoints: bool = True
    controls: RunControls = field(default_factory=RunControls)
    execution: Execution = field(default_factory=Execution)


def config_errors(error: ConfigError) -> None:
    error_lines("\n".join(str(single) for single in error.errors))


def run_benchmark_command(opts: BenchmarkOptions) -> int:
    if opts.allow_missing_keys and not opts.dry_run:
        error_lines("--allow-missing-keys is only valid with --dry-run")
        return EXIT_USAGE
    try:
        selection = Selection(
            dataset_path(opts.path, opts.dataset), opts.layer, opts.include, opts.exclude
        )
        selected, warnings = select_tasks(discover_tasks(selection.path), selection)
        condition = load_condition(
            opts.manifest, opts.endpoint_config, opts.artifact_root, verify=False
        )
        stack = opts.execution.stack_choice(opts.stack, opts.env, opts.relay_url)
        modes = choose_modes(stack, opts.env, opts.relay_url)
        check_condition(condition)
        request = RunRequest(
            condition,
            modes.env,
            selection,
            tuple(selected),
            opts.attempts,
            _run_settings(opts, modes, condition),
        )
        target, run_warnings = choose_run(
            opts.jobs_dir,
            request,
            run_name=opts.run_name,
            job_name=opts.job_name,
            new_run=opts.new_run,
        )
    except ConfigError as error:
        config_errors(error)
        return EXIT_USAGE
    except ModeError as error:
        error_lines(str(error))
        return EXIT_USAGE
    except Refused as error:  # a dry run exits 1 on every failed check (§2.4)
        error_lines(str(error))
        return EXIT_USAGE if opts.dry_run else error.code
    unit = Unit(
        target.jobs,
        target.paths.root,
        target.record.settings,
        target.record.environment.value,
        target.paths.root,
        target,
    )
    warnings += run_warnings
    options = RunOptions(
        opts.timeout_multiplier,
        opts.keep_channels,
        opts.buzz_bin_dir,
        opts.keep_containers,
        opts.settle_ms,
    )
    invocation = Invocation(
        n_concurrent=opts.n_concurrent,
        keep_errors=opts.keep_errors,
        quiet=opts.quiet,
        report=opts.report,
        state_dir=opts.state_dir,
        relay_port=opts.relay_port,
        relay_url=opts.relay_url,
        database_url=opts.database_url,
        endpoint_config=opts.endpoint_config,
        fresh=opts.fresh,
        check_endpoints=opts.check_endpoints,
        controls=opts.controls,
        execution=opts.execution,
    )
    if opts.dry_run:
        return _dry_run(unit, condition, modes, options, invocation, selection, warnings, opts)
    for warning in warnings:
        output_console(stderr=True).print(f"warning: {warning}")
    return run_plan(unit, condition, modes, options, invocation)


def _run_settings(opts: BenchmarkOptions, modes: Modes, condition: Condition) -> RunSettings:
    """What a new run records so that `orchestra resume RUN_DIR` starts its jobs the same way."""
    return RunSettings(
        manifest=condition.manifest_path.absolute().as_posix(),
        endpoint_config=condition.endpoint_config.path.absolute().as_posix(),
        artifact_root=condition.artifact_root.as_posix(),
        stack=StackMode(modes.stack),
        relay_url=opts.relay_url,
        database_url=storable_database_url(opts.database_url),
        relay_port=opts.relay_port,
        state_dir=opts.state_dir.absolute().as_posix(),
        n_concurrent=opts.n_concurrent,
        timeout_multiplier=opts.timeout_multiplier,
        keep_channels=opts.keep_channels,
        keep_containers=opts.keep_containers,
        settle_ms=opts.settle_ms,
        buzz_bin_dir=opts.buzz_bin_dir.absolute().as_posix() if opts.buzz_bin_dir else None,
        report=opts.report,
    )


def _dry_run(
    unit: Unit,
    condition: Condition,
    modes: Modes,
    options: RunOptions,
    invocation: Invocation,
    selection: Selection,
    warnings: list[str],
    opts: BenchmarkOptions,
) -> int:
    """Every check the real run makes before it starts the stack; the plan; nothing written."""
    try:
        api_keys = _preflight(
            unit, condition, modes, options, allow_missing_keys=opts.allow_missing_keys
        )
        owed = unit.owed(invocation.keep_errors)
    except Refused as error:
        error_lines(str(error))
        if error.missing_keys:
            sys.stderr.write("note: --allow-missing-keys prints the plan without the keys\n")
        return EXIT_USAGE
    except DocumentError as error:
        error_lines(str(error))
        return EXIT_USAGE
    plan = Plan(selection, unit.jobs, tuple(warnings))
    text = render_dry_run(
        plan,
        condition,
        stack_mode=modes.stack,
        env_mode=modes.env,
        environ=os.environ,
        run=unit.describe(owed),
    )
    print(text, end="")
    # Power said out loud (issue 29): the smallest change a comparison of this plan can detect
    print(dry_run_power_text([(len(job.tasks), job.attempts) for job in plan.jobs]), end="")
    _print_cost_estimate(opts.jobs_dir, condition, unit.n_planned)
    try:
        print(dry_run_text(invocation.execution), end="")
    except OrchestraError as error:  # the cluster cannot be reached or offers no slot
        error_lines(str(error))
        return error.exit_code
    if invocation.check_endpoints:  # the live check, asked for with --check-endpoints
        try:
            _check_endpoints(condition, api_keys, output_console())
        except Preflight as error:
            error_lines(str(error))
            return EXIT_PREFLIGHT
    return EXIT_OK


# --- preflight --------------------------------------------------------------------------------


def check_condition(condition: Condition) -> None:
    """Artifact hashes, endpoints the config lacks, unsupported providers: validation errors
    of the manifest and endpoint config (exit 1, §2.4), checked before the run is chosen,
    whose record names the endpoints."""
    problems = condition_problems(condition)
    if problems:
        raise Refused(EXIT_USAGE, "\n".join(map(str, problems)))


def _api_keys(condition: Condition, *, allow_missing: bool = False) -> dict[str, str]:
    """Every roster endpoint's key (`Preflight` naming each missing one unless allowed)."""
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
    if missing and not allow_missing:
        raise MissingKeys("\n".join(missing))
    return keys


def _check_endpoints(condition: Condition, api_keys: dict[str, str], console: Console) -> None:
    """The live check: one minimal authenticated request per endpoint, all at once."""
    if condition.is_oracle:
        return
    results = asyncio.run(probe_endpoints(condition, api_keys))
    failed = [result for result in results if result.problem is not None]
    if failed:
        raise Preflight("\n".join(result.line() for result in failed))
    names = ", ".join(result.endpoint for result in results)
    console.print(f"endpoint check: {names} answered", markup=False, highlight=False)


def _print_cost_estimate(jobs_dir: Path, condition: Condition, planned: int) -> None:
    estimate = estimate_cost(jobs_dir, condition.manifest_sha256, planned)
    if estimate is None:
        print(f"Cost estimate  none (no earlier job of this condition in {jobs_dir})")
    else:
        print(estimate.line())


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


def _check_local_harbor_tasks(jobs: tuple[PlannedJob, ...], env: str) -> None:
    """The local env runs a Harbor task only in the bubblewrap sandbox and only from a
    Dockerfile that does nothing but place files (issue 20.2); one line per problem."""
    tasks = {task.dir: task for job in jobs for task in job.tasks if task.is_harbor}
    if env != "local" or not tasks:
        return
    problems = []
    support = sandbox_support()
    if support.program is None:
        problems.append(
            f"Harbor tasks run in the local env only in the bubblewrap sandbox ({support.problem}); "
            "use --env docker"
        )
    for task in tasks.values():
        try:
            read_local_image(task.paths.environment_dir)
        except LocalImageError as error:
            problems.append(str(error))
    if problems:
        raise Preflight("\n".join(problems))


def _check_resumable(
    jobs: tuple[PlannedJob, ...], condition: Condition, env: str, jobs_dir: Path
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


def _preflight(
    unit: Unit,
    condition: Condition,
    modes: Modes,
    options: RunOptions,
    *,
    allow_missing_keys: bool = False,
) -> dict[str, str]:
    """Every check that needs no stack, after the condition's own (`_check_condition`), in
    the real run's order, for the real run and `--dry-run` alike (`Refused` with the real
    run's exit code); the API keys."""
    try:
        _check_resumable(unit.jobs, condition, modes.env, unit.jobs_dir)
    except (JobConfigMismatch, DocumentError) as error:
        raise Refused(EXIT_USAGE, str(error)) from None
    except JobInUse as error:
        raise Refused(EXIT_PREFLIGHT, str(error)) from None
    try:
        api_keys = _api_keys(condition, allow_missing=allow_missing_keys)
        _check_programs(options.buzz_bin_dir)
        _check_jobs_dir(unit.jobs_dir)
        _check_local_harbor_tasks(unit.jobs, modes.env)
    except Preflight as error:
        missing_keys = isinstance(error, MissingKeys)
        raise Refused(EXIT_PREFLIGHT, str(error), missing_keys=missing_keys) from None
    return api_keys


def _check_relay_port(modes: Modes, state: BenchmarkState, invocation: Invocation) -> None:
    """The embedded relay's port is free (or this state dir's own relay holds it): checked with
    the rest of preflight, before the run is written, so a busy port leaves no run behind
    (`StackError`, exit 2, §5.4)."""
    if invocation.execution.ray is None and modes.stack == "embedded":
        asyncio.run(EmbeddedStack(state, invocation.relay_port).preflight())


# --- running ----------------------------------------------------------------------------------


def run_plan(
    unit: Unit, condition: Condition, modes: Modes, options: RunOptions, invocation: Invocation
) -> int:
    try:
        api_keys = _preflight(unit, condition, modes, options)
        owed = unit.owed(invocation.keep_errors)
        if invocation.execution.ray is None:  # under Ray, Docker is the nodes' business
            check_docker(modes)
        state = load_state(invocation.state_dir)
        _check_relay_port(modes, state, invocation)
        executor = start_executor(invocation.execution)
    except Refused as error:
        error_lines(str(error))
        return error.code
    except DocumentError as error:
        error_lines(str(error))
        return EXIT_USAGE
    except (StackError, StateError) as error:
        error_lines(str(error))
        return EXIT_PREFLIGHT
    except OrchestraError as error:  # the Ray cluster (or its extra)
        error_lines(str(error))
        return error.exit_code
    try:
        return _run_plan(
            unit, condition, modes, options, invocation, api_keys, owed, state, executor
        )
    finally:
        stop_executor(invocation.execution)


def _run_plan(
    unit: Unit,
    condition: Condition,
    modes: Modes,
    options: RunOptions,
    invocation: Invocation,
    api_keys: dict[str, str],
    owed: int,
    state: BenchmarkState,
    executor: Executor,
) -> int:
    console = output_console()
    interrupt = Interrupt()
    sandbox = sandbox_support()
    if modes.env == "local" and sandbox.kind is SandboxKind.NONE:
        print(sandbox.warning(), file=sys.stderr)  # one line, whatever the terminal's width
    if invocation.check_endpoints:  # before the run is announced: a failure creates nothing
        try:
            _check_endpoints(condition, api_keys, console)
        except Preflight as error:
            error_lines(str(error))
            return EXIT_PREFLIGHT
    console.print(unit.describe(owed), highlight=False, soft_wrap=True)
    if condition.is_oracle:
        console.print(
            "[yellow]oracle condition: agents replay the reference solutions; "
            "scores measure the pipeline, not a model[/yellow]"
        )
    unit.begin(owed)

    async def run() -> tuple[list[JobOutcome], bool]:
        loop = asyncio.get_running_loop()
        for sig in INTERRUPT_SIGNALS:
            loop.add_signal_handler(sig, interrupt.trigger)

        def output_gone() -> None:
            # On the loop's next turn, so a Ctrl-C that closed the pipe (`… | grep`) is seen first.
            loop.call_soon_threadsafe(_note_output_gone, unit.path, interrupt)

        when_stdout_gone(output_gone)
        outcomes: list[JobOutcome] = []
        skip = {JobPaths.of(unit.jobs_dir, job.name).root for job in unit.jobs}
        for note in await reap_jobs_dir(unit.jobs_root, skip=skip):
            console.print(f"reaped a dead run's leftovers: {note}", markup=False)
        async with driver_stack(
            invocation.execution,
            modes,
            state,
            relay_port=invocation.relay_port,
            relay_url=invocation.relay_url,
            database_url=invocation.database_url,
            fresh=invocation.fresh,
        ) as (stack_info, watch):
            settings = Settings(
                condition=condition,
                environment=modes.env,
                stack=stack_info,
                state=state,
                options=options,
                api_keys=api_keys,
                jobs_dir=unit.jobs_dir,
                jobs_root=unit.jobs_root,
                n_concurrent=invocation.n_concurrent,
                keep_errors=invocation.keep_errors,
                relay_port=invocation.relay_port,
                endpoint_config_path=condition.endpoint_config.path,
                sandbox=sandbox,
                watch=watch,
                controls=invocation.controls,
            )
            progress = Progress(console, quiet=invocation.quiet)
            try:
                for job in unit.jobs:
                    outcome = await run_job(job, settings, progress, interrupt, executor)
                    outcomes.append(outcome)
                    if (
                        outcome.interrupted
                        or outcome.stop is not None
                        or outcome.count(TrialStatus.SCORED) + outcome.count(TrialStatus.ERROR)
                        < job.n_trials
                    ):
                        break
            finally:
                await settings.oracle.stop()
        return outcomes, interrupt.requested.is_set()

    resume = resume_command(unit, modes, options, invocation)
    try:
        outcomes, interrupted = asyncio.run(run())
    except (StackError, JobInUse) as error:
        # the terminal's Ctrl-C also reaches the stack's children (pip, docker): their failure
        # is then the interruption, not a stack fault
        interrupted = interrupt.requested.is_set()
        if interrupted:
            print("interrupted while the stack was starting; no trial ran", file=sys.stderr)
        else:
            error_lines(str(error))
        _print_resume(resume)
        return EXIT_INTERRUPTED if interrupted else EXIT_PREFLIGHT
    except (JobConfigMismatch, DocumentError) as error:
        error_lines(str(error))
        return EXIT_USAGE
    _print_summary(console, unit)
    for outcome in outcomes:
        if outcome.stop is not None:
            console.print(
                f"job {outcome.name} stopped early ({outcome.stop.reason}): {outcome.stop.message}",
                markup=False,
                highlight=False,
            )
    _write_reports(console, unit, invocation.report)
    code = _exit_code(outcomes, interrupted, unit.n_planned)
    if (
        interrupted
        or any(o.stop is not None for o in outcomes)
        or sum(len(o.results) for o in outcomes) < unit.n_planned
    ):
        _print_resume(resume)
    return code


def _note_output_gone(results_dir: Path, interrupt: Interrupt) -> None:
    if interrupt.requested.is_set():
        return  # Ctrl-C in `… | grep` ends grep too: then the closed pipe is no news
    sys.stderr.write(
        "note: standard output closed; the run goes on without printing and writes its results "
        f"to {results_dir} (Ctrl-C cancels it)\n"
    )


def _print_summary(console: Console, unit: Unit) -> None:
    console.print()
    # `--json` is `summarize`'s option: after a run the hint is the whole command
    summarize = shlex.join(["orchestra", "summarize", "--json", display_path(unit.path)])
    print_summary(aggregate(unit.records()), console, every_column=summarize)


def _write_reports(console: Console, unit: Unit, requested: bool) -> None:
    from orchestra.cli.report_commands import write_reports

    for job_dirs, out_dir in unit.report_dirs(requested):
        files = write_reports(job_dirs, out_dir)
        console.print(f"reports: {files.report_json}, {files.junit_xml}, {files.report_html}")


def _print_resume(command: str) -> None:
    """The last line a stopped command prints: the command that finishes the plan."""
    sys.stdout.flush()
    sys.stderr.write(f"the plan is not finished; to resume it:\n{command}\n")
    sys.stderr.flush()


def _exit_code(outcomes: list[JobOutcome], interrupted: bool, planned: int) -> int:
    if interrupted:
        return EXIT_INTERRUPTED
    if any(outcome.stop is not None for outcome in outcomes):
        return EXIT_PREFLIGHT  # stopped early: not everything was run (issue 13)
    results = [r for o in outcomes for r in o.results]
    if any(r.status is not TrialStatus.SCORED for r in results) or len(results) < planned:
        return EXIT_TRIAL_ERRORS
    return EXIT_OK
