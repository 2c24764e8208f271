"""`orchestra report`, `compare` and `leaderboard`; `register(app)` adds them to the app."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestra.cli.errors import fail
from orchestra.cli.help import Command, epilog
from orchestra.cli.leaderboard import LEADERBOARD_EPILOG, leaderboard
from orchestra.cli.options import with_options
from orchestra.documents.io import DocumentError
from orchestra.report.compare.comparison import ALPHA, CompareInputError, compare_paths, exit_code
from orchestra.report.compare.format import FORMATTERS, effect_plan
from orchestra.report.compare.history import history_side
from orchestra.report.files import report_problem, write_reports


class CompareFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


REPORT_EPILOG = epilog(
    (
        ("orchestra report jobs/<run>", "report.json, junit.xml, report.html in the run"),
        (
            "orchestra report jobs/<run-a> jobs/<run-b>/<job> -o out/",
            "one report of a run and a job",
        ),
    ),
    (
        ("0", "written"),
        ("1", "usage error, a directory that is not a run or job, or cannot write"),
    ),
)
COMPARE_EPILOG = epilog(
    (
        ("orchestra compare jobs/<baseline> jobs/<candidate>", "what changed, per task"),
        (
            "orchestra compare old/report.json jobs/<run> --format markdown > compare.md",
            "for a pull request",
        ),
        (
            "orchestra compare --baseline-history results.db jobs/<run>",
            "against the condition's last 30 runs",
        ),
        (
            "orchestra compare jobs/<a> jobs/<b> --target-effect 0.1",
            "attempts per task needed to see 10 points",
        ),
    ),
    (
        ("0", "no significant regression, and every baseline task has a scored trial"),
        ("1", "usage error, or an input that is not a run, job or report.json"),
        (
            "3",
            "a regression in the decision's family at --alpha (the suite's, or a task's "
            "confirmed by its confirmation attempts), or a baseline task with no scored trial "
            "in the candidate",
        ),
    ),
)


def report(
    job_dirs: Annotated[
        list[Path],
        typer.Argument(metavar="DIR...", help="One or more run or job directories."),
    ],
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out-dir",
            "-o",
            metavar="DIR",
            help="Where to write the files.  [default: the run or job directory, when there is "
            "only one]",
        ),
    ] = None,
) -> None:
    """Write report.json, junit.xml and report.html (one static page) for one or more runs or
    jobs."""
    if out_dir is None:
        if len(job_dirs) != 1:
            fail("--out-dir is required when reporting on more than one directory")
        out_dir = job_dirs[0]
    try:
        files = write_reports(job_dirs, out_dir)
    except (DocumentError, OSError) as error:
        fail(report_problem(error, out_dir))
    for path in files.paths:
        typer.echo(f"wrote {path}")


@with_options(["baseline_history", "history_runs", "confirm_target", "fail_below_target"])
def compare(
    sides: Annotated[
        list[Path],
        typer.Argument(
            metavar="[BASELINE] CANDIDATE",
            help="Baseline and candidate run or job directories (or their report.json); with "
            "--baseline-history, only the candidate's run or job directory.",
        ),
    ],
    output_format: Annotated[
        CompareFormat, typer.Option("--format", help="How to print the comparison.")
    ] = CompareFormat.text,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            metavar="A",
            help="Significance level of the suite's exact paired test a regression must pass "
            "to fail the comparison.",
        ),
    ] = ALPHA,
    target_effect: Annotated[
        float | None,
        typer.Option(
            "--target-effect",
            metavar="E",
            help="Also print the attempts per task needed to detect a change of E (0-1, "
            "e.g. 0.1 for 10 points) with 80 % power at --alpha over the tasks compared.",
        ),
    ] = None,
    **options: Any,
) -> None:
    """Did the candidate regress? The suite's mean change with a clustered interval and
    an exact test, per-task leads, and the smallest change this comparison can detect; exit 3
    on a suite-level regression significant at --alpha or a baseline task the candidate has no
    scored trial of."""
    if not 0 < alpha < 1:
        fail(f"--alpha must be between 0 and 1 (got {alpha:g})")
    history = options["baseline_history"]
    wanted = 1 if history is not None else 2
    if len(sides) != wanted:
        fail(
            "compare takes BASELINE CANDIDATE, or --baseline-history DB CANDIDATE "
            f"(got {len(sides)} paths)"
        )
    if target_effect is not None and not 0 < target_effect <= 1:
        fail(f"--target-effect must be within (0, 1] (got {target_effect:g})")
    try:
        baseline = (
            sides[0]
            if history is None
            else history_side(history, sides[0], options["history_runs"])
        )
        comparison = compare_paths(
            baseline,
            sides[-1],
            alpha,
            target=options["confirm_target"],
            fail_below_target=options["fail_below_target"],
        )
    except (DocumentError, CompareInputError) as error:
        fail(str(error))
    if target_effect is not None:
        comparison.target_effect = effect_plan(comparison.suite, target_effect, alpha)
    sys.stdout.write(FORMATTERS[output_format.value](comparison))
    raise typer.Exit(exit_code(comparison))


def register(app: typer.Typer) -> None:
    for name, function, command_epilog, short_help in (
        ("report", report, REPORT_EPILOG,
         "Write report.json, junit.xml and report.html for runs or jobs."),
        ("compare", compare, COMPARE_EPILOG,
         "Paired comparison of two runs or jobs: verdict, interval, power."),
        ("leaderboard", leaderboard, LEADERBOARD_EPILOG,
         "Rank conditions with intervals and pairwise paired verdicts."),
    ):  # fmt: skip
        app.command(name=name, cls=Command, epilog=command_epilog, short_help=short_help)(function)
