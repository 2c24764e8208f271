"""`orchestra regrade RUN`: the current verifiers re-score a finished run from its stored
evidence into a new run directory (orchestrator.md §2.6 "Regrade"); `register(app)` adds it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from orchestra.cli.errors import fail
from orchestra.cli.help import Command, epilog
from orchestra.cli.options import with_options
from orchestra.config.errors import display_path
from orchestra.documents.io import DocumentError
from orchestra.plural import plural
from orchestra.run.regrade import RegradeError, regrade_run

REGRADE_EPILOG = epilog(
    (
        ("orchestra regrade jobs/<run>", "into jobs/<run>-regraded-<UTC time>"),
        ("orchestra regrade jobs/<run> --run-name fixed", "into jobs/fixed"),
        ("orchestra compare jobs/<run> jobs/<run>-regraded-…", "what the new verifiers changed"),
    ),
    (
        ("0", "regraded"),
        ("1", "not a run, a run without stored evidence, or a target that exists"),
    ),
)


@with_options(
    ["jobs_dir", "run_name"],
    model_defaults=False,
    notes={"jobs_dir": "beside RUN", "run_name": "<run>-regraded-<UTC>"},
)
def regrade(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="The finished run to re-score.")],
    **options: Any,
) -> None:
    """Re-score a finished run with the tasks' current verifiers; no agent runs."""
    try:
        outcome = regrade_run(run, say=typer.echo, **options)
    except (RegradeError, DocumentError) as error:
        fail(str(error))
    for line in outcome.kept:
        typer.echo(f"kept {line}")
    for line in outcome.changed:
        typer.echo(f"changed {line}")
    typer.echo(
        f"wrote {display_path(outcome.run_dir)}: {plural(outcome.regraded, 'trial')} regraded, "
        f"{len(outcome.changed)} with another reward"
    )


def register(app: typer.Typer) -> None:
    app.command(
        name="regrade",
        cls=Command,
        epilog=REGRADE_EPILOG,
        short_help="Re-score a finished run with the current verifiers, into a new run.",
    )(regrade)
