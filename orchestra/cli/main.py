"""`orchestra`: the benchmark command line (orchestrator.md §2)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError  # typer >= 0.26

from orchestra.cli.benchmark import BenchmarkOptions, run_benchmark_command
from orchestra.cli.cleanup import run_cleanup
from orchestra.cli.db_commands import register as register_db_commands
from orchestra.cli.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, fail
from orchestra.cli.execution import (
    ExecutorChoice,
    ExecutorOption,
    RayAddress,
    RaySlotsPerNode,
    execution_of,
)
from orchestra.cli.export import register as register_export_commands
from orchestra.cli.help import (
    READ_EXIT_CODES,
    RUN_EXIT_CODES,
    VERSION_LINE,
    Command,
    Group,
    epilog,
)
from orchestra.cli.options import (
    ENV_HELP,
    STACK_HELP,
    DatabaseUrl,
    Env,
    EnvMode,
    HardCostCap,
    JobsDir,
    KeepErrors,
    Layer,
    MaxCostUsd,
    NConcurrent,
    ProviderErrorLimit,
    Quiet,
    RelayPort,
    RelayUrl,
    Retries,
    SkipEndpointCheck,
    Stack,
    StackMode,
    StateDir,
    run_controls,
)
from orchestra.cli.report_commands import register as register_report_commands
from orchestra.cli.resume import ResumeOptions, run_resume_command
from orchestra.cli.stack import stack_app
from orchestra.cli.task import register as register_task_commands
from orchestra.cli.terminal import output_console, print_summary
from orchestra.documents.io import DocumentError
from orchestra.documents.job import DEFAULT_SETTLE_MS, MAX_SETTLE_MS
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.breaker import DEFAULT_PROVIDER_ERROR_LIMIT
from orchestra.jobs.retries import DEFAULT_RETRIES
from orchestra.jobs.run import job_records
from orchestra.paths import (
    DEFAULT_ENDPOINT_CONFIG,
    DEFAULT_JOBS_DIR,
    DEFAULT_MANIFEST,
    DEFAULT_STATE_DIR,
)
from orchestra.report.render import summary_csv, summary_json
from orchestra.stack.embedded import DEFAULT_RELAY_PORT
from orchestra.streams import guard_standard_streams

app = typer.Typer(
    name="orchestra",
    help="Benchmark AI agents working in Buzz group chat: run tasks under a condition, then "
    "summarize, report and compare the jobs.",
    cls=Group,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    epilog=epilog(
        (
            ("orchestra benchmark", "the whole dataset under the oracle (offline, no API key)"),
            ("orchestra benchmark --dry-run", "print the plan and start nothing"),
            ("orchestra summarize jobs/<run>", "the pass rates of a finished run"),
            ("orchestra COMMAND --help", "every option of a command, with examples"),
        ),
        (
            ("0", "success (benchmark, resume: every trial scored)"),
            ("1", "usage or validation error (nothing was run)"),
            ("2", "preflight or stack failure"),
            ("3", "a trial ended in error (benchmark, resume) or a task regressed (compare)"),
            ("130", "interrupted; in-flight trials are cancelled"),
        ),
    ),
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(VERSION_LINE)
        raise typer.Exit(EXIT_OK)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            expose_value=False,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    if ctx.invoked_subcommand is None:  # bare `orchestra`: the help, and success
        typer.echo(ctx.get_help())
        raise typer.Exit(EXIT_OK)


@app.command(
    short_help="Run tasks × attempts under one condition (default: the oracle).",
    cls=Command,
    epilog=epilog(
        (
            (
                "orchestra benchmark",
                "every task under the oracle: regression × 1, then workflow × 3",
            ),
            (
                "orchestra benchmark --layer workflow -k 2 --dry-run",
                "plan 4 tasks × 2, run nothing",
            ),
            (
                "orchestra benchmark -i '*mention*' --stack embedded --env local",
                "two tasks, no Docker",
            ),
            (
                "orchestra benchmark --manifest manifests/buzz-native-solo-luna.yaml "
                "--endpoint-config endpoints/openai-live.json -n 1",
                "a real model (needs OPENAI_COMPAT_API_KEY)",
            ),
        ),
        RUN_EXIT_CODES,
    ),
)
def benchmark(
    path: Annotated[
        Path | None,
        typer.Option(
            "--path",
            "-p",
            metavar="PATH",
            help="A task directory (holds task.toml) or a dataset directory (its subdirectories "
            "are tasks).  [default: tasks/buzz-native]",
        ),
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset",
            "-d",
            metavar="PATH",
            help="Like --path, for Harbor familiarity: a local dataset directory only.",
        ),
    ] = None,
    include_task: Annotated[
        list[str] | None,
        typer.Option(
            "--include-task",
            "-i",
            metavar="GLOB",
            help="Keep only tasks whose name or directory matches GLOB (shell-style, "
            "case-sensitive); repeatable.  [default: every task]",
        ),
    ] = None,
    exclude_task: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude-task",
            "-x",
            metavar="GLOB",
            help="Drop tasks matching GLOB; repeatable, applied after --include-task.",
        ),
    ] = None,
    layer: Annotated[
        Layer | None,
        typer.Option(
            "--layer", help="Keep only the tasks of this evaluation layer.  [default: all]"
        ),
    ] = None,
    attempts: Annotated[
        int | None,
        typer.Option(
            "--attempts",
            "-k",
            min=1,
            metavar="N",
            help="Attempts per task, one job for every task.  [default: per layer: regression "
            "1, workflow 3, harbor 5, one job per layer selected]",
        ),
    ] = None,
    manifest: Annotated[
        Path,
        typer.Option(
            "--manifest",
            metavar="PATH",
            help="Condition manifest (YAML): the agents, models and prompts; the default, the "
            "oracle, replays the reference solutions offline.",
        ),
    ] = DEFAULT_MANIFEST,
    endpoint_config: Annotated[
        Path,
        typer.Option(
            "--endpoint-config",
            metavar="PATH",
            help="Endpoint config (JSON) defining every model endpoint the manifest uses.",
        ),
    ] = DEFAULT_ENDPOINT_CONFIG,
    n_concurrent: NConcurrent = 4,
    jobs_dir: JobsDir = DEFAULT_JOBS_DIR,
    job_name: Annotated[
        str | None,
        typer.Option(
            "--job-name",
            metavar="NAME",
            help="Job directory name inside the run: the name itself for a one-job plan, the "
            "base of <name>-regression / <name>-workflow for two.  [default: the run name]",
        ),
    ] = None,
    run_name: Annotated[
        str | None,
        typer.Option(
            "--run-name",
            metavar="NAME",
            help="Run directory name under --jobs-dir; an existing run of that name and plan is "
            "resumed.  [default: --job-name, else <condition>-<UTC stamp>]",
        ),
    ] = None,
    new_run: Annotated[
        bool,
        typer.Option(
            "--new-run",
            help="Start a new run even when an unfinished run of the same plan exists "
            "(default: resume the most recent one).",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Make every check that needs no stack, print the run and plan, start nothing.",
        ),
    ] = False,
    allow_missing_keys: Annotated[
        bool,
        typer.Option(
            "--allow-missing-keys",
            help="With --dry-run: report missing API keys as warnings, not errors.",
        ),
    ] = False,
    stack: Stack = StackMode.auto,
    env: Env = EnvMode.auto,
    relay_url: RelayUrl = None,
    database_url: DatabaseUrl = None,
    relay_port: RelayPort = DEFAULT_RELAY_PORT,
    buzz_bin_dir: Annotated[
        Path | None,
        typer.Option(
            "--buzz-bin-dir",
            metavar="DIR",
            help="Experimental: run buzz-acp, buzz-agent and buzz-dev-mcp from DIR.  "
            "[default: this package's scripts]",
        ),
    ] = None,
    state_dir: StateDir = DEFAULT_STATE_DIR,
    artifact_root: Annotated[
        Path | None,
        typer.Option(
            "--artifact-root",
            metavar="DIR",
            help="Root the manifest's prompt, persona and skill paths resolve against.  "
            "[default: the parent of the manifest's directory]",
        ),
    ] = None,
    timeout_multiplier: Annotated[
        float,
        typer.Option(
            "--timeout-multiplier",
            metavar="X",
            help="Scale every task's agent and verifier time limits (a number > 0).",
        ),
    ] = 1.0,
    keep_channels: Annotated[
        bool,
        typer.Option("--keep-channels", help="Leave trial channels unarchived at teardown."),
    ] = False,
    keep_containers: Annotated[
        bool,
        typer.Option(
            "--keep-containers",
            help="Docker env: keep each trial's agents' and verifier containers for debugging.",
        ),
    ] = False,
    settle_ms: Annotated[
        int,
        typer.Option(
            "--settle-ms",
            min=0,
            max=MAX_SETTLE_MS,
            metavar="MS",
            help="Grace after a solo agent's last turn before the trial stops (§7.11).",
        ),
    ] = DEFAULT_SETTLE_MS,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Docker stack only: recreate its database volume first (secrets are kept).",
        ),
    ] = False,
    keep_errors: KeepErrors = False,
    quiet: Quiet = False,
    report: Annotated[
        bool,
        typer.Option(
            "--report", help="Write report.json, junit.xml and report.html into each job directory."
        ),
    ] = False,
    check_endpoints: Annotated[
        bool,
        typer.Option(
            "--check-endpoints", help="With --dry-run: also send the live endpoint check."
        ),
    ] = False,
    skip_endpoint_check: SkipEndpointCheck = False,
    retries: Retries = DEFAULT_RETRIES,
    provider_error_limit: ProviderErrorLimit = DEFAULT_PROVIDER_ERROR_LIMIT,
    max_cost_usd: MaxCostUsd = None,
    hard_cost_cap: HardCostCap = False,
    executor: ExecutorOption = ExecutorChoice.local,
    ray_address: RayAddress = None,
    ray_slots_per_node: RaySlotsPerNode = None,
) -> None:
    """Run tasks × attempts under one condition (default: the oracle, offline, no API key).

    Prints one line per finished trial and the summary at the end; each job's files are in
    JOBS_DIR/RUN_NAME/JOB_NAME. Rerunning the same command resumes the run (`orchestra resume
    RUN_DIR` too); --new-run starts a new one.
    """
    if timeout_multiplier <= 0:
        fail(f"--timeout-multiplier must be > 0 (got {timeout_multiplier:g})")
    if check_endpoints and not dry_run:
        fail("--check-endpoints goes with --dry-run (a real run checks endpoints by default)")
    if check_endpoints and skip_endpoint_check:
        fail("--check-endpoints and --skip-endpoint-check are mutually exclusive")
    controls = run_controls(retries, provider_error_limit, max_cost_usd, hard_cost_cap)
    options = BenchmarkOptions(
        path=path,
        dataset=dataset,
        include=tuple(include_task or ()),
        exclude=tuple(exclude_task or ()),
        layer=layer.task_layer if layer else None,
        attempts=attempts,
        manifest=manifest,
        endpoint_config=endpoint_config,
        n_concurrent=n_concurrent,
        jobs_dir=jobs_dir,
        job_name=job_name,
        dry_run=dry_run,
        stack=stack.value,
        env=env.value,
        relay_url=relay_url,
        database_url=database_url,
        relay_port=relay_port,
        buzz_bin_dir=buzz_bin_dir,
        state_dir=state_dir,
        artifact_root=artifact_root,
        timeout_multiplier=timeout_multiplier,
        keep_channels=keep_channels,
        keep_containers=keep_containers,
        settle_ms=settle_ms,
        fresh=fresh,
        keep_errors=keep_errors,
        quiet=quiet,
        report=report,
        run_name=run_name,
        new_run=new_run,
        allow_missing_keys=allow_missing_keys,
        check_endpoints=check_endpoints if dry_run else not skip_endpoint_check,
        controls=controls,
        execution=execution_of(executor, ray_address, ray_slots_per_node),
    )
    raise typer.Exit(run_benchmark_command(options))


THE_RUNS = "  [default: the run's]"


@app.command(
    short_help="Finish a run: every trial and job it still owes.",
    cls=Command,
    epilog=epilog(
        (
            ("orchestra resume jobs/<run>", "run what the run still owes, as it was started"),
            ("orchestra resume jobs/<run> --keep-errors -n 1", "re-run only cancelled trials"),
            (
                "orchestra resume jobs/<run> --stack embedded --env local",
                "finish a run on another stack",
            ),
        ),
        RUN_EXIT_CODES,
    ),
)
def resume(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            help="A run directory (or one of its job directories): finishes the whole plan; "
            "a job directory from before runs: that job.",
        ),
    ],
    n_concurrent: Annotated[
        int | None,
        typer.Option(
            "--n-concurrent",
            "-n",
            min=1,
            metavar="N",
            help="Trials in flight at once; 1 is the safe laptop setting." + THE_RUNS,
        ),
    ] = None,
    keep_errors: KeepErrors = False,
    endpoint_config: Annotated[
        Path | None,
        typer.Option(
            "--endpoint-config",
            metavar="PATH",
            help="Endpoint config to use instead of the one the run recorded." + THE_RUNS,
        ),
    ] = None,
    stack: Annotated[
        StackMode, typer.Option("--stack", help=STACK_HELP + THE_RUNS, show_default=False)
    ] = StackMode.auto,
    env: Annotated[
        EnvMode, typer.Option("--env", help=ENV_HELP + THE_RUNS, show_default=False)
    ] = EnvMode.auto,
    relay_url: RelayUrl = None,
    database_url: DatabaseUrl = None,
    relay_port: Annotated[
        int | None,
        typer.Option(
            "--relay-port",
            min=1,
            max=65535,
            metavar="PORT",
            help="Embedded stack: the port the relay binds on 127.0.0.1." + THE_RUNS,
        ),
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            metavar="DIR",
            help="Persistent secrets, wheelhouse and embedded-stack data." + THE_RUNS,
        ),
    ] = None,
    timeout_multiplier: Annotated[
        float | None,
        typer.Option(
            "--timeout-multiplier",
            metavar="X",
            help="Scale every task's agent and verifier time limits (a number > 0)." + THE_RUNS,
        ),
    ] = None,
    buzz_bin_dir: Annotated[
        Path | None,
        typer.Option(
            "--buzz-bin-dir",
            metavar="DIR",
            help="Experimental: run buzz-acp, buzz-agent and buzz-dev-mcp from DIR." + THE_RUNS,
        ),
    ] = None,
    settle_ms: Annotated[
        int | None,
        typer.Option(
            "--settle-ms",
            min=0,
            max=MAX_SETTLE_MS,
            metavar="MS",
            help="Settle grace for the re-run trials (§7.11)." + THE_RUNS,
        ),
    ] = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report",
            help="Write report.json, junit.xml and report.html into the run directory "
            "(reports that exist are always rewritten).",
        ),
    ] = False,
    quiet: Quiet = False,
    skip_endpoint_check: SkipEndpointCheck = False,
    retries: Retries = DEFAULT_RETRIES,
    provider_error_limit: ProviderErrorLimit = DEFAULT_PROVIDER_ERROR_LIMIT,
    max_cost_usd: MaxCostUsd = None,
    hard_cost_cap: HardCostCap = False,
    executor: ExecutorOption = ExecutorChoice.local,
    ray_address: RayAddress = None,
    ray_slots_per_node: RaySlotsPerNode = None,
) -> None:
    """Finish a run (or a job from before runs): every trial and job it still owes.

    Scored trials are kept; error, cancelled and unfinished ones are run again (their old
    directories move to JOB_DIR/.superseded/), and jobs never started are started. Options not
    given keep the run's recorded values.
    """
    if timeout_multiplier is not None and timeout_multiplier <= 0:
        fail(f"--timeout-multiplier must be > 0 (got {timeout_multiplier:g})")
    options = ResumeOptions(
        n_concurrent=n_concurrent,
        keep_errors=keep_errors,
        endpoint_config=endpoint_config,
        stack=stack.value,
        env=env.value,
        relay_url=relay_url,
        database_url=database_url,
        relay_port=relay_port,
        state_dir=state_dir,
        timeout_multiplier=timeout_multiplier,
        buzz_bin_dir=buzz_bin_dir,
        settle_ms=settle_ms,
        report=report,
        quiet=quiet,
        check_endpoints=not skip_endpoint_check,
        controls=run_controls(retries, provider_error_limit, max_cost_usd, hard_cost_cap),
        execution=execution_of(executor, ray_address, ray_slots_per_node),
    )
    raise typer.Exit(run_resume_command(path, options))


@app.command(
    short_help="Print pass rates, pass@k and cost per layer and task.",
    cls=Command,
    epilog=epilog(
        (
            ("orchestra summarize jobs/<run>", "the table, fitted to the terminal"),
            ("orchestra summarize jobs/<run>/<job> jobs/<other-run>", "a job and a run as one"),
            ("orchestra summarize --json jobs/<run> | jq .conditions[0].totals", "every field"),
        ),
        READ_EXIT_CODES,
    ),
)
def summarize(
    job_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="DIR...",
            help="One or more run or job directories; jobs of one condition aggregate together.",
        ),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole summary as JSON (every field).")
    ] = False,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="Print one CSV row per task, with every field.")
    ] = False,
) -> None:
    """Print pass rates, pass@k, failing dimensions, tokens and cost per layer and task, for
    runs (all their jobs, those never started counted as not started) or jobs.

    The table fits the terminal: narrow terminals get fewer columns and each task's failing
    dimensions on a line of their own; --json and --csv always hold everything.
    """
    if as_json and as_csv:
        fail("--json and --csv are mutually exclusive")
    try:
        records = [record for path in job_dirs for record in job_records(path)]
    except DocumentError as error:
        fail(str(error))
    document = aggregate(records)
    if as_json:
        sys.stdout.write(summary_json(document))
    elif as_csv:
        sys.stdout.write(summary_csv(document))
    else:
        print_summary(document, output_console())


@app.command(
    short_help="Remove leftover trial containers and local processes.",
    cls=Command,
    epilog=epilog(
        (
            ("orchestra cleanup", "every job's leftover containers and processes"),
            ("orchestra cleanup --job <job>", "one job's leftovers"),
        ),
        (("0", "done (what could not be checked is said on stderr)"), ("1", "usage error")),
    ),
)
def cleanup(
    job: Annotated[
        str | None,
        typer.Option(
            "--job",
            metavar="NAME",
            help="Only this job's (or this run's) leftovers.  [default: every run and job]",
        ),
    ] = None,
    jobs_dir: JobsDir = DEFAULT_JOBS_DIR,
) -> None:
    """Remove leftover trial containers and kill leftover local-env processes.

    Local processes are killed whether or not Docker answers.
    """
    run_cleanup(job, jobs_dir)


register_report_commands(app)
register_export_commands(app)
register_task_commands(app)
register_db_commands(app)
app.add_typer(
    stack_app, name="stack", short_help="Bring the relay and its database up or down; status."
)


def main() -> None:
    """Console-script entry point; usage errors exit 1 as orchestrator.md §2.4 requires."""
    guard_standard_streams()  # a closed pipe or terminal loses output, never a run
    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as error:  # `orchestra stack`: its help, as bare `orchestra`
        typer.echo(error.format_message())
        sys.exit(EXIT_OK)
    except ClickException as error:  # bad options or arguments: printed, exit 1 (not click's 2)
        error.show()
        sys.exit(EXIT_USAGE)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)
