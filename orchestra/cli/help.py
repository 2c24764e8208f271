"""Help that teaches: plain-text help with examples and exit codes on every command.

The help is click's plain layout (`rich_markup_mode=None`): `-i, --include-task GLOB` as the
spec writes it, greppable, no boxes to wrap at 60 columns. Flags show no `<bool>` metavar.
"""

from __future__ import annotations

import textwrap
from typing import Any

from typer._click import Command as ClickCommand  # typer >= 0.26 vendors click
from typer._click import Context, HelpFormatter
from typer.core import TyperCommand, TyperGroup, TyperOption

from orchestra import __version__

VERSION_LINE = f"orchestra {__version__}"

#: orchestrator.md §2.4, the codes of a command that runs trials.
RUN_EXIT_CODES = (
    ("0", "every planned trial finished with status scored"),
    ("1", "usage, validation or planning error (nothing was run)"),
    ("2", "preflight or stack failure (nothing or not everything was run)"),
    ("3", "all jobs ran to the end but at least one trial has status error"),
    (
        "130",
        "interrupted (Ctrl-C, SIGTERM, SIGHUP, a closed terminal); in-flight trials are cancelled",
    ),
)
READ_EXIT_CODES = (
    ("0", "done"),
    ("1", "usage error, or a directory that is not a readable job"),
)


def _plain_flags(ctx: Context, params: list[Any]) -> None:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""  # a flag takes no value: no `<bool>` after it


def _command_lines(command: str, width: int) -> list[str]:
    """A shell command broken at spaces with ` \\` continuations so each line fits `width`."""
    lines: list[str] = []
    current = ""
    for word in command.split(" "):
        if current and len(current) + 1 + len(word) + 2 > width:
            lines.append(current + " \\")
            current = "    " + word
        else:
            current = f"{current} {word}" if current else word
    return [*lines, current]


def write_epilog(epilog_text: str, formatter: HelpFormatter) -> None:
    """Render an `epilog()` text at the formatter's width: section titles, commands (`$ `),
    their meanings, and exit codes (`<code>: <meaning>`) with hanging indents."""
    width = max(formatter.width - formatter.current_indent, 40)
    out: list[str] = []
    for line in epilog_text.splitlines():
        if line.startswith("$ "):
            out += ["  " + part for part in _command_lines(line[2:], width - 2)]
        elif line.startswith("= "):
            out += textwrap.wrap(line[2:], width, initial_indent=" " * 6, subsequent_indent=" " * 6)
        elif line.startswith("# "):
            code, _, meaning = line[2:].partition(": ")
            first = f"  {code:>3}  "
            out += textwrap.wrap(
                meaning, width, initial_indent=first, subsequent_indent=" " * len(first)
            )
        else:
            out.append(line)
    indent = " " * formatter.current_indent
    formatter.write_paragraph()
    formatter.write("".join(f"{indent}{line}".rstrip() + "\n" for line in out))


class _TeachingHelp(ClickCommand):
    """Help with flags shown bare and the `epilog()` laid out at the terminal's width; mixed
    into the command and group classes below."""

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        _plain_flags(ctx, self.get_params(ctx))
        super().format_help(ctx, formatter)

    def format_epilog(self, ctx: Context, formatter: HelpFormatter) -> None:
        if self.epilog:
            write_epilog(self.epilog, formatter)


class Command(_TeachingHelp, TyperCommand):
    """Use as `@app.command(cls=Command, epilog=epilog(...))`."""


class Group(_TeachingHelp, TyperGroup):
    """Use as `typer.Typer(cls=Group, epilog=epilog(...))`."""


def epilog(examples: tuple[tuple[str, str], ...], exit_codes: tuple[tuple[str, str], ...]) -> str:
    """Examples (command, what it does) and exit codes, in the form `write_epilog` lays out."""
    lines = ["Examples:"]
    for command, meaning in examples:
        lines += [f"$ {command}", f"= {meaning}"]
    lines += ["", "Exit codes:"]
    lines += [f"# {code}: {meaning}" for code, meaning in exit_codes]
    return "\n".join(lines)
