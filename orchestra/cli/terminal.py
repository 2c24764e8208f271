"""The consoles of `orchestra`: fitted to a terminal, one unwrapped line per event elsewhere."""

from __future__ import annotations

from rich.console import Console

from orchestra.documents.summary import Summary
from orchestra.report.text.summary import render_summary


def output_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr); off a terminal it never wraps, so logs stay greppable."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, soft_wrap=True)


def summary_width(console: Console) -> int | None:
    """The width the summary must fit: the terminal's; None for files and pipes, which get the
    full table. (Not `COLUMNS`: a parent that loaded GNU readline, pytest for one, exports it.)"""
    return console.width if console.is_terminal else None


def print_summary(document: Summary, console: Console, *, every_column: str = "--json") -> None:
    render_summary(document, console, summary_width(console), every_column=every_column)
