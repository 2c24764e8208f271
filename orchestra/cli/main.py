"""`orchestra`: the benchmark command line (orchestrator.md §2)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError  # typer >= 0.26

from orchestra.cli.benchmark import register as register_benchmark_command
from orchestra.cli.cleanup import run_cleanup
from orchestra.cli.db_commands import register as register_db_commands
from orchestra.cli.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, fail
from orchestra.cli.export import register as register_export_commands
from orchestra.cli.help import READ_EXIT_CODES, VERSION_LINE, Command, Group, epilog
from orchestra.cli.options import with_options
from orchestra.cli.regrade import register as register_regrade_command
from orchestra.cli.report_commands import register as register_report_commands
from orchestra.cli.resume import register as register_resume_command
from orchestra.cli.stack import stack_app
from orchestra.cli.task import register as register_task_commands
from orchestra.cli.terminal import output_console, print_summary
from orchestra.documents.io import DocumentError
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.run import job_records
from orchestra.report.text.exports import summary_csv, summary_json
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
@with_options(["jobs_dir"])
def cleanup(
    job: Annotated[
        str | None,
        typer.Option(
            "--job",
            metavar="NAME",
            help="Only this job's (or this run's) leftovers.  [default: every run and job]",
        ),
    ] = None,
    **options: Any,
) -> None:
    """Remove leftover trial containers and kill leftover local-env processes.

    Local processes are killed whether or not Docker answers.
    """
    run_cleanup(job, options["jobs_dir"])


register_benchmark_command(app)
register_resume_command(app)
register_report_commands(app)
register_export_commands(app)
register_task_commands(app)
register_db_commands(app)
register_regrade_command(app)
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
