"""`orchestra`: the benchmark command line (orchestrator.md §2)."""

from __future__ import annotations

import asyncio
import shutil
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from typer._click.exceptions import ClickException  # typer >= 0.26 vendors click

from orchestra.cli.benchmark import BenchmarkOptions, run_benchmark_command
from orchestra.cli.errors import EXIT_INTERRUPTED, EXIT_PREFLIGHT, EXIT_USAGE, fail
from orchestra.cli.report_commands import register as register_report_commands
from orchestra.cli.resume import ResumeOptions, run_resume_command
from orchestra.cli.stack import stack_app
from orchestra.config.task import Layer as TaskLayer
from orchestra.documents.io import DocumentError
from orchestra.documents.job import DEFAULT_SETTLE_MS, MAX_SETTLE_MS
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.breaker import DEFAULT_PROVIDER_ERROR_LIMIT
from orchestra.jobs.controls import RunControls
from orchestra.jobs.retries import DEFAULT_RETRIES
from orchestra.jobs.run import job_records, trial_sandboxes
from orchestra.paths import (
    DEFAULT_ENDPOINT_CONFIG,
    DEFAULT_JOBS_DIR,
    DEFAULT_MANIFEST,
    DEFAULT_STATE_DIR,
)
from orchestra.processes import kill_processes_in
from orchestra.report.render import SUMMARY_WIDTH, render_summary, summary_csv, summary_json
from orchestra.trial.env.container import DockerEnvError, cleanup_containers

app = typer.Typer(
    name="orchestra",
    help="Harbor-style benchmark orchestrator for AI agents in Buzz group chat.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(stack_app, name="stack")
register_report_commands(app)


class StackMode(StrEnum):
    auto = "auto"
    docker = "docker"
    embedded = "embedded"
    external = "external"


class EnvMode(StrEnum):
    auto = "auto"
    docker = "docker"
    local = "local"


class Layer(StrEnum):
    regression = "regression"
    workflow = "workflow"

    @property
    def task_layer(self) -> TaskLayer:
        return "regression" if self is Layer.regression else "workflow"


# Options of both `benchmark` and `resume`: what may stop or rerun trials (issue 13).
SkipEndpointCheck = Annotated[
    bool,
    typer.Option(
        "--skip-endpoint-check",
        help="Do not send the one live request per endpoint that preflight sends.",
    ),
]
Retries = Annotated[
    int,
    typer.Option(
        "--retries",
        min=0,
        help="Rerun a trial that ended in a harness error (provider, stack, …) up to N times.",
    ),
]
ProviderErrorLimit = Annotated[
    int,
    typer.Option(
        "--provider-error-limit",
        min=0,
        help="Stop starting trials after N in a row end in provider errors (0: never).",
    ),
]
MaxCostUsd = Annotated[
    float | None,
    typer.Option("--max-cost-usd", help="Start no new trial once the run has cost this many USD."),
]
HardCostCap = Annotated[
    bool, typer.Option("--hard-cost-cap", help="At --max-cost-usd, cancel the trials in flight.")
]


@app.command()
def benchmark(
    path: Annotated[
        Path | None, typer.Option("--path", "-p", help="Task or dataset directory.")
    ] = None,
    dataset: Annotated[
        str | None, typer.Option("--dataset", "-d", help="Local dataset directory.")
    ] = None,
    include_task: Annotated[list[str] | None, typer.Option("--include-task", "-i")] = None,
    exclude_task: Annotated[list[str] | None, typer.Option("--exclude-task", "-x")] = None,
    layer: Annotated[Layer | None, typer.Option("--layer")] = None,
    attempts: Annotated[int | None, typer.Option("--attempts", "-k", min=1)] = None,
    manifest: Annotated[Path, typer.Option("--manifest")] = DEFAULT_MANIFEST,
    endpoint_config: Annotated[Path, typer.Option("--endpoint-config")] = DEFAULT_ENDPOINT_CONFIG,
    n_concurrent: Annotated[int, typer.Option("--n-concurrent", "-n", min=1)] = 4,
    jobs_dir: Annotated[Path, typer.Option("--jobs-dir")] = DEFAULT_JOBS_DIR,
    job_name: Annotated[str | None, typer.Option("--job-name")] = None,
    run_name: Annotated[
        str | None,
        typer.Option(
            "--run-name",
            help="Run directory name under --jobs-dir (default: --job-name, else "
            "<condition>-<UTC stamp>); an existing run of that name is resumed.",
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
    dry_run: Annotated[bool, typer.Option("--dry-run")] = False,
    allow_missing_keys: Annotated[
        bool,
        typer.Option(
            "--allow-missing-keys",
            help="With --dry-run: report missing API keys as warnings, not errors.",
        ),
    ] = False,
    stack: Annotated[StackMode, typer.Option("--stack")] = StackMode.auto,
    env: Annotated[EnvMode, typer.Option("--env")] = EnvMode.auto,
    relay_url: Annotated[str | None, typer.Option("--relay-url")] = None,
    database_url: Annotated[str | None, typer.Option("--database-url")] = None,
    relay_port: Annotated[int, typer.Option("--relay-port", min=1, max=65535)] = 3600,
    buzz_bin_dir: Annotated[Path | None, typer.Option("--buzz-bin-dir")] = None,
    state_dir: Annotated[Path, typer.Option("--state-dir")] = DEFAULT_STATE_DIR,
    artifact_root: Annotated[Path | None, typer.Option("--artifact-root")] = None,
    timeout_multiplier: Annotated[float, typer.Option("--timeout-multiplier")] = 1.0,
    keep_channels: Annotated[bool, typer.Option("--keep-channels")] = False,
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
            help="Grace after a solo agent's last turn before the trial stops (§7.11).",
        ),
    ] = DEFAULT_SETTLE_MS,
    fresh: Annotated[bool, typer.Option("--fresh")] = False,
    keep_errors: Annotated[bool, typer.Option("--keep-errors")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
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
) -> None:
    """Run tasks × attempts under one condition (default: the oracle, offline)."""
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
    )
    raise typer.Exit(run_benchmark_command(options))


def run_controls(
    retries: int, provider_error_limit: int, max_cost_usd: float | None, hard_cost_cap: bool
) -> RunControls:
    if max_cost_usd is not None and not max_cost_usd > 0:
        fail(f"--max-cost-usd must be > 0 (got {max_cost_usd:g})")
    if hard_cost_cap and max_cost_usd is None:
        fail("--hard-cost-cap needs --max-cost-usd")
    return RunControls.of(
        retries=retries,
        provider_error_limit=provider_error_limit,
        max_cost_usd=max_cost_usd,
        hard_cost_cap=hard_cost_cap,
    )


@app.command()
def resume(
    path: Annotated[
        Path,
        typer.Argument(
            help="A run directory (or one of its job directories): finishes the whole plan."
        ),
    ],
    n_concurrent: Annotated[int | None, typer.Option("--n-concurrent", "-n", min=1)] = None,
    keep_errors: Annotated[bool, typer.Option("--keep-errors")] = False,
    endpoint_config: Annotated[Path | None, typer.Option("--endpoint-config")] = None,
    stack: Annotated[StackMode, typer.Option("--stack")] = StackMode.auto,
    env: Annotated[EnvMode, typer.Option("--env")] = EnvMode.auto,
    relay_url: Annotated[str | None, typer.Option("--relay-url")] = None,
    database_url: Annotated[str | None, typer.Option("--database-url")] = None,
    relay_port: Annotated[int | None, typer.Option("--relay-port", min=1, max=65535)] = None,
    state_dir: Annotated[Path | None, typer.Option("--state-dir")] = None,
    timeout_multiplier: Annotated[float | None, typer.Option("--timeout-multiplier")] = None,
    buzz_bin_dir: Annotated[Path | None, typer.Option("--buzz-bin-dir")] = None,
    settle_ms: Annotated[
        int | None,
        typer.Option(
            "--settle-ms",
            min=0,
            max=MAX_SETTLE_MS,
            help="Settle grace for the re-run trials (default: the run's own).",
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
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    skip_endpoint_check: SkipEndpointCheck = False,
    retries: Retries = DEFAULT_RETRIES,
    provider_error_limit: ProviderErrorLimit = DEFAULT_PROVIDER_ERROR_LIMIT,
    max_cost_usd: MaxCostUsd = None,
    hard_cost_cap: HardCostCap = False,
) -> None:
    """Finish a run (or a job from before runs): every trial and job it still owes."""
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
    )
    raise typer.Exit(run_resume_command(path, options))


@app.command()
def summarize(
    job_dirs: Annotated[list[Path], typer.Argument(help="One or more run or job directories.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
    as_csv: Annotated[bool, typer.Option("--csv")] = False,
) -> None:
    """Print the aggregation of §11 for one or more runs or jobs."""
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
        render_summary(document, Console(width=max(Console().width, SUMMARY_WIDTH)))


@app.command()
def cleanup(
    job: Annotated[
        str | None, typer.Option("--job", help="Only this job's (or this run's) leftovers.")
    ] = None,
    jobs_dir: Annotated[Path, typer.Option("--jobs-dir")] = DEFAULT_JOBS_DIR,
) -> None:
    """Remove leftover trial containers and kill leftover local-env processes."""
    if shutil.which("docker") is not None:
        try:
            removed = asyncio.run(cleanup_containers(job))
        except DockerEnvError as error:
            fail(str(error), EXIT_PREFLIGHT)
        typer.echo(f"removed {len(removed)} container(s)")
    killed = sum(len(kill_processes_in(sandbox)) for sandbox in trial_sandboxes(jobs_dir, job))
    typer.echo(f"killed {killed} leftover process(es)")


def main() -> None:
    """Console-script entry point; usage errors exit 1 as orchestrator.md §2.4 requires."""
    try:
        code = app(standalone_mode=False)
    except ClickException as error:  # bad options or arguments: printed, exit 1 (not click's 2)
        error.show()
        sys.exit(EXIT_USAGE)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)
