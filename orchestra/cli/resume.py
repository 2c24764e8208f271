"""`orchestra resume`: finish a run's whole plan, or a job from before runs (§2.5)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from orchestra.cli.benchmark import Refused, check_condition, config_errors, run_plan
from orchestra.cli.errors import EXIT_USAGE, error_lines
from orchestra.cli.execution import Execution
from orchestra.cli.runs import Invocation, Unit, settings_of_job
from orchestra.config.condition import load_condition
from orchestra.config.errors import ConfigError
from orchestra.config.task import load_task
from orchestra.documents.run import RunRecord
from orchestra.jobs.controls import RunControls
from orchestra.jobs.layout import load_job_config
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.run import RunTarget, check_plan_unchanged, run_of
from orchestra.paths import JobPaths
from orchestra.stack.select import ModeError, Modes, choose_modes
from orchestra.trial.context import RunOptions


@dataclass(frozen=True)
class ResumeOptions:
    """`orchestra resume`: None keeps what the run (or job) was started with."""

    n_concurrent: int | None = None
    keep_errors: bool = False
    endpoint_config: Path | None = None
    stack: str = "auto"
    env: str = "auto"
    relay_url: str | None = None
    database_url: str | None = None
    relay_port: int | None = None
    state_dir: Path | None = None
    timeout_multiplier: float | None = None
    buzz_bin_dir: Path | None = None
    settle_ms: int | None = None
    report: bool = False
    quiet: bool = False
    check_endpoints: bool = True
    controls: RunControls = field(default_factory=RunControls)
    execution: Execution = field(default_factory=Execution)


def run_resume_command(path: Path, opts: ResumeOptions) -> int:
    try:
        unit = _resumed_unit(path)
        stored = unit.settings
        condition = load_condition(
            Path(stored.manifest),
            opts.endpoint_config or Path(stored.endpoint_config),
            Path(stored.artifact_root),
            verify=False,
        )
        modes, relay_url = _resumed_modes(unit, opts)
        check_condition(condition)
        if unit.run is not None:
            jobs = check_plan_unchanged(unit.run.paths, unit.run.record, condition, modes.env)
            unit = replace(unit, jobs=jobs, run=replace(unit.run, jobs=jobs))
    except ConfigError as error:  # a malformed document is a DocumentError, a ConfigError
        config_errors(error)
        return EXIT_USAGE
    except ModeError as error:
        error_lines(str(error))
        return EXIT_USAGE
    except Refused as error:
        error_lines(str(error))
        return error.code
    buzz_bin_dir = opts.buzz_bin_dir or (Path(stored.buzz_bin_dir) if stored.buzz_bin_dir else None)
    options = RunOptions(
        opts.timeout_multiplier or stored.timeout_multiplier,
        stored.keep_channels,
        buzz_bin_dir,
        stored.keep_containers,
        stored.settle_ms if opts.settle_ms is None else opts.settle_ms,
    )
    invocation = Invocation(
        n_concurrent=opts.n_concurrent or stored.n_concurrent,
        keep_errors=opts.keep_errors,
        quiet=opts.quiet,
        report=opts.report,
        state_dir=opts.state_dir or Path(stored.state_dir),
        relay_port=opts.relay_port or stored.relay_port,
        relay_url=relay_url,
        database_url=opts.database_url or (stored.database_url if relay_url else None),
        endpoint_config=condition.endpoint_config.path,
        check_endpoints=opts.check_endpoints,
        controls=opts.controls,
        execution=opts.execution,
    )
    return run_plan(unit, condition, modes, options, invocation)


def _resumed_modes(unit: Unit, opts: ResumeOptions) -> tuple[Modes, str | None]:
    """The stack and environment the run started with (and the relay URL of an external
    stack), unless the options say otherwise."""
    stored = unit.settings
    stack, relay_url = opts.stack, opts.relay_url
    if stack == "auto" and relay_url is None:
        stack = stored.stack.value
    if stack == "external" and relay_url is None:
        relay_url = stored.relay_url
    env = unit.environment if opts.env == "auto" else opts.env
    return choose_modes(stack, env, relay_url), relay_url


def _resumed_unit(path: Path) -> Unit:
    """The run `path` is or belongs to, or the job directory from before runs it is (its
    jobs are filled in once the condition is loaded: `check_plan_unchanged`)."""
    run = run_of(path)
    if run is not None:
        record = RunRecord.load(run.run_json)
        target = RunTarget(run, record, (), "named")
        return Unit((), run.root, record.settings, record.environment.value, run.root, target)
    config = load_job_config(JobPaths(path))
    tasks = tuple(load_task(Path(task.dir)) for task in config.plan.tasks)
    job = PlannedJob(config.job_name, config.plan.layer, config.plan.attempts, tasks)
    return Unit(
        (job,), path.absolute().parent, settings_of_job(config), config.environment.value, path
    )
