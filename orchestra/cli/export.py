"""`orchestra export harbor RUN_OR_JOB OUT_DIR` (issue 20.3); `register(app)` adds the group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestra.cli.errors import fail
from orchestra.documents.io import DocumentError
from orchestra.export.harbor import ExportError, export_harbor
from orchestra.plural import plural

export_app = typer.Typer(help="Write runs or jobs in another tool's format.", no_args_is_help=True)


@export_app.command(name="harbor")
def harbor(
    source: Annotated[Path, typer.Argument(help="A run directory or one of its job directories.")],
    out_dir: Annotated[Path, typer.Argument(help="Harbor jobs directory to write (empty or new).")],
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
    app.add_typer(export_app, name="export")
