"""`orchestra resume`: a run's stored `RunConfig` updated by the flags given, its whole plan
finished by `orchestra.run`, or a job from before runs (§2.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from orchestra.cli.errors import error_lines
from orchestra.cli.help import RUN_EXIT_CODES, Command, epilog
from orchestra.cli.options import RESUMABLE, SkipEndpointCheck, given_options, with_options
from orchestra.cli.run_output import EXIT_CODES, finish
from orchestra.cli.terminal import output_console
from orchestra.run.driver import Run
from orchestra.run.execution import Execution
from orchestra.run.outcome import Refused
from orchestra.run.prepare import plan_resume


@with_options(RESUMABLE, model_defaults=False)
def resume(
    ctx: typer.Context,
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            help="A run directory (or one of its job directories): finishes the whole plan; "
            "a job directory from before runs: that job.",
        ),
    ],
    skip_endpoint_check: SkipEndpointCheck = False,
    **options: Any,
) -> None:
    """Finish a run (or a job from before runs): every trial and job it still owes.

    Scored trials are kept; error, cancelled and unfinished ones are run again (their old
    directories move to JOB_DIR/.superseded/), and jobs never started are started. Options not
    given keep the run's recorded values.
    """
    given = given_options(ctx, options)
    if skip_endpoint_check:
        given["check_endpoints"] = False
    raise typer.Exit(run_resume(path, given))


def run_resume(path: Path, given: dict[str, object]) -> int:
    console = output_console()
    try:
        plan = plan_resume(path, given)
    except Refused as error:
        error_lines(str(error))
        return EXIT_CODES[error.end]
    return finish(Run(plan, Execution.of(plan.effective), console).execute(), plan, console)


def register(app: typer.Typer) -> None:
    app.command(
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
    )(resume)
