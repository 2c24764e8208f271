"""One-line errors on stderr and the exit codes of orchestrator.md §2.4."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_PREFLIGHT = 2
EXIT_TRIAL_ERRORS = 3
EXIT_INTERRUPTED = 130


def error_lines(message: str) -> None:
    for line in message.splitlines() or [message]:
        sys.stderr.write(f"error: {line.removeprefix('error: ')}\n")


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    error_lines(message)
    raise typer.Exit(code)
