"""`orchestra benchmark`: the options into a `RunConfig` (a `--config` file, then the flags
given), the run started or resumed by `orchestra.run`, its end printed (§2.2-§2.5)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
import yaml
from pydantic import ValidationError

from orchestra.cli.errors import EXIT_OK, EXIT_USAGE, error_lines, fail
from orchestra.cli.help import RUN_EXIT_CODES, Command, epilog
from orchestra.cli.options import (
    RUN_OPTIONS,
    AllowMissingKeys,
    CheckEndpoints,
    ConfigFile,
    Dataset,
    DryRun,
    PrintConfig,
    SkipEndpointCheck,
    given_options,
    with_options,
)
from orchestra.cli.run_output import EXIT_CODES, finish
from orchestra.cli.terminal import output_console
from orchestra.config.errors import ConfigError
from orchestra.documents.run_config import RunConfig
from orchestra.documents.run_config_file import load_run_config, options_problem
from orchestra.jobs.plan import PlanError, dataset_dir
from orchestra.run.driver import Run
from orchestra.run.execution import Execution
from orchestra.run.outcome import Refused
from orchestra.run.prepare import plan_benchmark


@with_options(RUN_OPTIONS)
def benchmark(
    ctx: typer.Context,
    config_file: ConfigFile = None,
    print_config: PrintConfig = False,
    dataset: Dataset = None,
    dry_run: DryRun = False,
    allow_missing_keys: AllowMissingKeys = False,
    check_endpoints: CheckEndpoints = False,
    skip_endpoint_check: SkipEndpointCheck = False,
    **options: Any,
) -> None:
    """Run tasks × attempts under one condition (default: the oracle, offline, no API key).

    Prints one line per finished trial and the summary at the end; each job's files are in
    JOBS_DIR/RUN_NAME/JOB_NAME. Rerunning the same command resumes the run (`orchestra resume
    RUN_DIR` too); --new-run starts a new one.
    """
    if check_endpoints and not dry_run:
        fail("--check-endpoints goes with --dry-run (a real run checks endpoints by default)")
    if check_endpoints and skip_endpoint_check:
        fail("--check-endpoints and --skip-endpoint-check are mutually exclusive")
    if allow_missing_keys and not dry_run:
        fail("--allow-missing-keys is only valid with --dry-run")
    given = given_options(ctx, options)
    if dataset is not None:
        if "paths" in given:
            fail("--path and --dataset are mutually exclusive; pass one of them")
        try:
            given["paths"] = [dataset_dir(dataset)]
        except PlanError as error:
            fail(str(error))
    if dry_run or skip_endpoint_check:  # a dry run sends the live check only when asked
        given["check_endpoints"] = check_endpoints
    config = run_config(config_file, given)
    if print_config:
        sys.stdout.write(yaml.safe_dump(config.shown(), sort_keys=False))
        raise typer.Exit(EXIT_OK)
    raise typer.Exit(run_benchmark(config, dry_run=dry_run, allow_missing_keys=allow_missing_keys))


def run_config(config_file: Path | None, given: dict[str, Any]) -> RunConfig:
    """The config file's options (or the defaults) with the flags given on top; exit 1 with
    one line naming the file or option on a bad one."""
    try:
        base = load_run_config(config_file) if config_file is not None else RunConfig()
        return base.updated(given)
    except ConfigError as error:
        fail(str(error))
    except ValidationError as error:  # options that contradict each other
        fail(options_problem(error, config_file))


def run_benchmark(
    config: RunConfig, *, dry_run: bool = False, allow_missing_keys: bool = False
) -> int:
    """The run `config` asks for, printed as the command prints it; the exit code."""
    console = output_console()
    execution = Execution.of(config)
    try:
        plan = plan_benchmark(config, execution)
    except Refused as error:
        error_lines(str(error))
        return EXIT_USAGE if dry_run else EXIT_CODES[error.end]  # a dry run: 1 (§2.4)
    run = Run(plan, execution, console)
    if dry_run:
        outcome = run.dry_run(allow_missing_keys=allow_missing_keys)
        if outcome.missing_keys:
            error_lines("\n".join(outcome.errors))
            sys.stderr.write("note: --allow-missing-keys prints the plan without the keys\n")
            return EXIT_USAGE
        return finish(outcome, plan, console)
    return finish(run.execute(), plan, console)


def register(app: typer.Typer) -> None:
    app.command(
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
                    "orchestra benchmark --config run.yaml -n 1",
                    "the options of run.yaml, one trial at a time",
                ),
            ),
            RUN_EXIT_CODES,
        ),
    )(benchmark)
