"""The options several `orchestra` commands share, each with its one-line help (orchestrator.md §2.2).

A default that is not a value (`None` meaning "the job's" or "every task") is written into the
help text; typer adds `[default: …]` for the others.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from orchestra.config.task import Layer as TaskLayer


class StackMode(StrEnum):
    auto = "auto"
    docker = "docker"
    embedded = "embedded"
    external = "external"


class EnvMode(StrEnum):
    auto = "auto"
    docker = "docker"
    local = "local"


class Layer(StrEnum):
    regression = "regression"
    workflow = "workflow"

    @property
    def task_layer(self) -> TaskLayer:
        return "regression" if self is Layer.regression else "workflow"


STACK_HELP = (
    "Where the relay and its database run: docker (compose), embedded (no Docker: a local "
    "PostgreSQL and relay subprocess) or external (--relay-url); auto picks docker when a "
    "Docker engine answers, else embedded."
)
ENV_HELP = (
    "Where agents and verifiers run: docker (a container per trial) or local (a sandbox "
    "directory on this host); auto follows the stack."
)

NConcurrent = Annotated[
    int,
    typer.Option(
        "--n-concurrent",
        "-n",
        min=1,
        metavar="N",
        help="Trials in flight at once; 1 is the safe laptop setting.",
    ),
]
KeepErrors = Annotated[
    bool,
    typer.Option(
        "--keep-errors",
        help="When resuming, keep trials that ended in error instead of re-running them.",
    ),
]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="Only the overall progress line, no per-trial lines.")
]
RelayUrl = Annotated[
    str | None,
    typer.Option(
        "--relay-url",
        metavar="URL",
        help="External stack: the relay's ws:// or wss:// URL (implies --stack external).",
    ),
]
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        metavar="URL",
        help="External stack: PostgreSQL URL for health checks and the trial registry (optional).",
    ),
]
JobsDir = Annotated[
    Path, typer.Option("--jobs-dir", metavar="DIR", help="Parent directory of job directories.")
]
StateDir = Annotated[
    Path,
    typer.Option(
        "--state-dir",
        metavar="DIR",
        help="Persistent secrets (the pinned user key), the wheelhouse and embedded-stack data.",
    ),
]
RelayPort = Annotated[
    int,
    typer.Option(
        "--relay-port",
        min=1,
        max=65535,
        metavar="PORT",
        help="Embedded stack: the port the relay binds on 127.0.0.1.",
    ),
]
Stack = Annotated[StackMode, typer.Option("--stack", help=STACK_HELP)]
Env = Annotated[EnvMode, typer.Option("--env", help=ENV_HELP)]
