"""`orchestra task new|check`: the task kit (docs/writing-a-task.md); `register(app)` adds it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from orchestra.cli.errors import EXIT_OK, EXIT_USAGE, fail
from orchestra.cli.help import Command, Group, epilog
from orchestra.cli.options import with_options
from orchestra.config.task import BUZZ_LAYERS
from orchestra.documents.enums import EnvKind
from orchestra.plural import plural
from orchestra.taskkit.check import CheckOptions, check_tasks
from orchestra.taskkit.scaffold import ScaffoldError, scaffold
from orchestra.taskkit.stack import StackOptions, check_run

task_app = typer.Typer(
    help="Write and check benchmark tasks (docs/writing-a-task.md).",
    cls=Group,
    rich_markup_mode=None,
    no_args_is_help=True,
    epilog=epilog(
        (
            ("orchestra task new my-suite/my-task --layer regression", "a task that runs at once"),
            ("orchestra task check my-suite/my-task", "prove it sound"),
        ),
        (("0", "done, every task sound"), ("1", "usage error or a task not sound")),
    ),
)


@task_app.command(
    name="new",
    cls=Command,
    short_help="Scaffold a task directory that passes `task check` as written.",
    epilog=epilog(
        (
            (
                "orchestra task new tasks/my-suite/my-task --layer regression",
                "instruction, fixture, verifier, cases, oracle and negative solutions",
            ),
            ("orchestra task check tasks/my-suite/my-task", "prove it sound, then edit it"),
        ),
        (("0", "written"), ("1", "usage error, or PATH exists and is not empty")),
    ),
)
def new(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="The task directory to create.")],
    task_layer: Annotated[
        str,
        typer.Option(
            "--layer",
            metavar="LAYER",
            help=f"The new task's evaluation layer ({' or '.join(BUZZ_LAYERS)}).",
        ),
    ] = "regression",
) -> None:
    """Write a trivial Buzz task at PATH: the agent answers `ready` in the requester's thread."""
    try:
        written = scaffold(path, task_layer)
    except ScaffoldError as error:
        fail(str(error))
    except OSError as error:
        fail(f"{error.filename or path}: cannot write ({error.strerror or error})")
    typer.echo(
        f"wrote {plural(len(written), 'file')} in {path}; check it: orchestra task check {path}"
    )


@task_app.command(
    name="check",
    cls=Command,
    short_help="Prove tasks sound: files, verifier cases, oracle 1.0 and negative 0.0.",
    epilog=epilog(
        (
            ("orchestra task check tasks/buzz-contracts/*", "every task of a dataset"),
            ("orchestra task check my-task --no-replay", "the checks that need no stack"),
            (
                "orchestra task check my-task --negatives dir/",
                "negative solutions kept as dir/<task>.sh",
            ),
        ),
        (("0", "every task is sound"), ("1", "something is missing (one line each on stderr)")),
    ),
)
@with_options(
    ["stack", "env", "relay_port", "relay_url", "state_dir", "n_concurrent"],
    defaults={"stack": None, "env": EnvKind.LOCAL},
    notes={"stack": "embedded; external with --relay-url"},
)
def check(
    directories: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH...",
            help="Task directories (hold task.toml).",
            exists=True,
        ),
    ],
    negatives: Annotated[
        Path | None,
        typer.Option(
            "--negatives",
            metavar="DIR",
            help="Negative solutions as DIR/<task dir name>.sh.  [default: the task's "
            "solution/negative.sh, else tests/fixtures/negative-solutions/<dataset>/]",
        ),
    ] = None,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay/--no-replay",
            help="Replay the oracle and negative solutions through the real stack.",
        ),
    ] = True,
    replay_cases: Annotated[
        bool,
        typer.Option(
            "--replay-cases",
            help="Also play every case of verifier-cases.toml through the real stack (as a "
            "solution the oracle replays) and check the real verifier's metrics; cases the buzz "
            "CLI cannot play are listed as left out.",
        ),
    ] = False,
    **options: Any,
) -> None:
    """Check that each task is sound and print what is missing, one line each.

    Sound: task.toml and buzz-fixture.toml valid; the verifier fails closed on missing or
    malformed evidence and gives every case of verifier-cases.toml its expected metrics; every
    metric is driven to 0.0 by a case and the reward to 1.0 by at least three; the oracle
    solution scores 1.0 and the negative solution 0.0 through the real stack (as `orchestra
    benchmark -p PATH` runs them); the verifier gives the oracle trial's verdict again, within
    its timeout, where no agent workspace exists.
    """
    given = options | {"stack": options["stack"] or ("external" if options["relay_url"] else None)}
    # the work directory is replaced by the check's own temporary directory
    stack_options = StackOptions(Path(), check_run({k: v for k, v in given.items() if v}))
    # `tasks/buzz-contracts/*` also matches the dataset's README.md: files are not tasks
    for skipped in (path for path in directories if path.is_file()):
        typer.echo(f"{skipped}: skipped (a file, not a task directory)")
    task_dirs = [path for path in directories if not path.is_file()]
    if not task_dirs:
        fail("no task directory among the paths given")
    checks = check_tasks(task_dirs, CheckOptions(stack_options, negatives, replay, replay_cases))
    unsound = [c for c in checks if c.problems]
    for result in checks:
        for note in result.notes:
            typer.echo(note)
        for problem in result.problems:
            typer.echo(problem, err=True)
        if not result.problems:
            typer.echo(f"{result.shown}: sound")
    if unsound:
        typer.echo(f"{plural(len(unsound), 'task')} of {len(checks)} not sound", err=True)
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    app.add_typer(task_app, name="task", short_help="Write and check benchmark tasks.")
