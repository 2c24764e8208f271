"""`orchestra db` (runs into a results database) and `orchestra trend` (pass rate per task over
runs); `register(app)` adds them to the app."""

from __future__ import annotations

import sqlite3
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from orchestra.cli.errors import fail
from orchestra.cli.help import Command, epilog
from orchestra.cli.terminal import output_console, summary_width
from orchestra.config.errors import display_path
from orchestra.documents.io import DocumentError
from orchestra.jsonio import write_text_atomic
from orchestra.plural import plural
from orchestra.report.html.trend import trend_page
from orchestra.report.trend.text import render_trend, trend_markdown
from orchestra.results.database import add_directory, open_sources
from orchestra.results.schema import DatabaseError, open_database
from orchestra.results.trend import read_trend

DB_EPILOG = epilog(
    (
        ("orchestra db jobs/nightly-* -o results.sqlite", "add (or replace) every nightly run"),
        ("orchestra db jobs/<run>/<job> -o results.sqlite", "replace one job of a run"),
        ("orchestra trend results.sqlite", "the pass rate per task over the runs"),
    ),
    (
        ("0", "written"),
        ("1", "a directory that is not a run or job, or a database that cannot be used"),
    ),
)
TREND_EPILOG = epilog(
    (
        ("orchestra trend results.sqlite", "every condition in the database"),
        ("orchestra trend jobs/nightly-*", "the same, straight from run directories"),
        ("orchestra trend results.sqlite --html trend.html", "the chart as a page"),
    ),
    (
        ("0", "printed"),
        ("1", "an input that is not a run, job or results database"),
    ),
)


def db(
    sources: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_OR_JOB...", help="Run or job directories to add."),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", metavar="FILE", help="The SQLite database to create or update."
        ),
    ],
) -> None:
    """Add runs and jobs to a SQLite results database; adding one again replaces its rows."""
    try:
        connection = open_database(out, create=True)
    except DatabaseError as error:
        fail(str(error))
    try:
        for source in sources:
            trials = add_directory(connection, source)
            typer.echo(f"added {display_path(source)}: {plural(trials, 'trial')}")
    except (DocumentError, DatabaseError) as error:
        fail(str(error))
    except sqlite3.Error as error:
        fail(f"{display_path(out)}: cannot write the database ({error})")
    finally:
        connection.close()
    typer.echo(f"wrote {display_path(out)}")


class TrendFormat(StrEnum):
    text = "text"
    markdown = "markdown"


def trend(
    sources: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUNS_OR_DB...",
            help="Run or job directories, or one results database from `orchestra db`.",
        ),
    ],
    output_format: Annotated[
        TrendFormat, typer.Option("--format", help="How to print the trend.")
    ] = TrendFormat.text,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the trend as JSON (every run and interval).")
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option("--html", metavar="OUT", help="Also write the trend chart as a page."),
    ] = None,
) -> None:
    """Per task, the pass rate over successive runs (by start time) with 95% intervals,
    marking tasks that flipped or are flaky."""
    try:
        connection = open_sources(sources)
    except (DocumentError, DatabaseError) as error:
        fail(str(error))
    try:
        document = read_trend(connection)
    except sqlite3.Error as error:
        fail(f"{display_path(sources[0])}: cannot read the database ({error})")
    finally:
        connection.close()
    if html is not None:
        try:
            write_text_atomic(html, trend_page(document))
        except OSError as error:
            fail(f"{display_path(html)}: cannot write the page ({error.strerror or error})")
        typer.echo(f"wrote {display_path(html)}", err=True)
    if as_json:
        sys.stdout.write(document.model_dump_json(indent=2) + "\n")
    elif output_format is TrendFormat.markdown:
        sys.stdout.write(trend_markdown(document))
    else:
        console = output_console()
        render_trend(document, console, summary_width(console))


def register(app: typer.Typer) -> None:
    app.command(
        name="db",
        cls=Command,
        epilog=DB_EPILOG,
        short_help="Add runs and jobs to a SQLite results database.",
    )(db)
    app.command(
        name="trend",
        cls=Command,
        epilog=TREND_EPILOG,
        short_help="Pass rate per task over successive runs.",
    )(trend)
