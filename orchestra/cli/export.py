"""`orchestra export harbor RUN_OR_JOB OUT_DIR` (issue 20.3); `register(app)` adds the group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestra.cli.errors import fail
from orchestra.cli.help import Command, Group, epilog
from orchestra.documents.io import DocumentError
from orchestra.export.harbor import ExportError, export_harbor
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
    short_help="Write runs or jobs as a Harbor 0.25 jobs directory.",
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
    """Write each job in Harbor 0.25's jobs-directory format, for `harbor view OUT_DIR`."""
    try:
        jobs = export_harbor(source, out_dir, force=force)
    except (DocumentError, ExportError) as error:
        fail(str(error))
    except OSError as error:
        fail(f"{error.filename or out_dir}: cannot write the export ({error.strerror or error})")
    for job in jobs:
        typer.echo(f"wrote {job.path} ({plural(job.n_trials, 'trial')})")


def register(app: typer.Typer) -> None:
    app.add_typer(
        export_app, name="export", short_help="Write runs or jobs in another tool's format."
    )
