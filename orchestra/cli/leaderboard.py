"""`orchestra leaderboard RUN_OR_JOB...`: conditions ranked with intervals and pairwise verdicts."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from orchestra.cli.errors import fail
from orchestra.cli.help import epilog
from orchestra.documents.io import DocumentError
from orchestra.jsonio import write_text_atomic
from orchestra.report.compare.comparison import ALPHA, CompareInputError
from orchestra.report.leaderboard.format import FORMATTERS
from orchestra.report.leaderboard.ranking import build_leaderboard


class LeaderboardFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"
    html = "html"


LEADERBOARD_EPILOG = epilog(
    (
        ("orchestra leaderboard jobs/<run-a> jobs/<run-b> jobs/<run-c>", "ranked, in a table"),
        (
            "orchestra leaderboard jobs/* --format html -o leaderboard.html",
            "one static page",
        ),
    ),
    (
        ("0", "printed or written"),
        ("1", "usage error, a directory that is not a run or job, or cannot write"),
    ),
)


def leaderboard(
    dirs: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_OR_JOB...", help="Run or job directories to rank."),
    ],
    output_format: Annotated[
        LeaderboardFormat, typer.Option("--format", help="How to print the leaderboard.")
    ] = LeaderboardFormat.text,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="FILE", help="Write to FILE instead of printing."),
    ] = None,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha", metavar="A", help="Significance level of the pairwise paired tests."
        ),
    ] = ALPHA,
) -> None:
    """Rank conditions by their mean pass rate over tasks (with 95 % intervals, pass^k, cost,
    tokens and time), pooling jobs by condition hash, with every pair's paired verdict."""
    if not 0 < alpha < 1:
        fail(f"--alpha must be between 0 and 1 (got {alpha:g})")
    try:
        board = build_leaderboard(dirs, alpha)
    except (DocumentError, CompareInputError) as error:
        fail(str(error))
    text = FORMATTERS[output_format.value](board)
    if out is None:
        sys.stdout.write(text)
        return
    try:
        write_text_atomic(out, text)
    except OSError as error:
        fail(f"{out}: cannot write the leaderboard ({error.strerror or error})")
    typer.echo(f"wrote {out}")
