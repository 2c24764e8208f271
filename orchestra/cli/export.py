"""`orchestra export harbor RUN_OR_JOB OUT_DIR` (docs/decisions.md D64, D76) and `orchestra export
inspect RUN_OR_JOB... OUT` (docs/decisions.md D77); `register(app)` adds the group."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from orchestra.cli.errors import fail
from orchestra.cli.help import Command, Group, epilog
from orchestra.documents.io import DocumentError
from orchestra.export.harbor import export_harbor
from orchestra.export.sources import ExportedJob, ExportError
from orchestra.plural import plural

export_app = typer.Typer(
    help="Write runs or jobs in another tool's format.",
    cls=Group,
    rich_markup_mode=None,
    no_args_is_help=True,
)


@export_app.command(
    name="harbor",
    cls=Command,
    short_help="Write runs or jobs as a Harbor jobs directory, for `harbor view`.",
    epilog=epilog(
        (
            ("orchestra export harbor jobs/<run> harbor-jobs/", "every job of the run"),
            ("harbor view harbor-jobs/", "look at them with Harbor's viewer"),
            (
                "orchestra export harbor jobs/<run>/<job> harbor-jobs/ --force",
                "replace that job's earlier export",
            ),
        ),
        (
            ("0", "written"),
            ("1", "usage error, a directory that is not a run or job, or cannot write"),
        ),
    ),
)
def harbor(
    source: Annotated[
        Path,
        typer.Argument(metavar="RUN_OR_JOB", help="A run directory or one of its job directories."),
    ],
    out_dir: Annotated[
        Path,
        typer.Argument(metavar="OUT_DIR", help="Harbor jobs directory to write (empty or new)."),
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Write into a non-empty OUT_DIR, replacing the jobs exported."
        ),
    ] = False,
) -> None:
    """Write each job in Harbor's jobs-directory format (checked against Harbor 0.26), for
    `harbor view OUT_DIR`. Our environments are recorded in Harbor's custom-environment form
    (`environment.import_path`), never as one of Harbor's own."""
    report_export(lambda: export_harbor(source, out_dir, force=force), out_dir, "trial")


@export_app.command(
    name="inspect",
    cls=Command,
    short_help="Write runs or jobs as Inspect AI eval logs (.eval), for `inspect view`.",
    epilog=epilog(
        (
            ("orchestra export inspect jobs/<run> inspect-logs/", "one log per job of the run"),
            ("orchestra export inspect jobs/<run-a> jobs/<run-b> inspect-logs/", "several runs"),
            ("inspect view --log-dir inspect-logs/", "look at them with Inspect's viewer"),
        ),
        (
            ("0", "written"),
            (
                "1",
                "usage error, a directory that is not a run or job, a log that exists "
                "(without --force), no inspect_ai installed, or cannot write",
            ),
        ),
    ),
)
def inspect(
    sources: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_OR_JOB...", help="Run directories or job directories."),
    ],
    out_dir: Annotated[
        Path, typer.Argument(metavar="OUT", help="Log directory to write the .eval files into.")
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Replace logs this export wrote before.")
    ] = False,
) -> None:
    """Write one Inspect AI eval log per job into OUT: a sample per trial (epoch = attempt)
    with the agents' messages and tool calls, the verifier's rewards as scores, errors, token
    usage and timings. Needs the `inspect` extra (pip install 'buzz-orchestra[inspect]')."""
    try:
        from orchestra.export.inspect_log import export_inspect
    except ImportError as error:
        missing = (error.name or "").split(".")[0] or str(error)
        fail(f"orchestra export inspect needs inspect_ai ({missing} cannot be imported): "
             "pip install 'buzz-orchestra[inspect]'")  # fmt: skip
    report_export(lambda: export_inspect(sources, out_dir, force=force), out_dir, "sample")


def report_export(write: Callable[[], list[ExportedJob]], out_dir: Path, unit: str) -> None:
    """Run an export: a line per job written, or its one-line error (exit 1)."""
    try:
        jobs = write()
    except (DocumentError, ExportError) as error:
        fail(str(error))
    except OSError as error:
        fail(f"{error.filename or out_dir}: cannot write the export ({error.strerror or error})")
    for job in jobs:
        typer.echo(f"wrote {job.path} ({plural(job.n_trials, unit)})")


def register(app: typer.Typer) -> None:
    app.add_typer(
        export_app, name="export", short_help="Write runs or jobs in another tool's format."
    )
