"""The options several `orchestra` commands share, each with its one-line help (orchestrator.md §2.2).

A default that is not a value (`None` meaning "the job's" or "every task") is written into the
help text; typer adds `[default: …]` for the others.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from orchestra.cli.errors import fail
from orchestra.config.task import LAYERS as TASK_LAYERS
from orchestra.config.task import Layer as TaskLayer
from orchestra.jobs.controls import RunControls


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
    harbor = "harbor"

    @property
    def task_layer(self) -> TaskLayer:
        return next(layer for layer in TASK_LAYERS if layer == self.value)


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
    Path, typer.Option("--jobs-dir", metavar="DIR", help="Parent directory of run directories.")
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

# Options of both `benchmark` and `resume`: what may stop or rerun trials (issue 13).
SkipEndpointCheck = Annotated[
    bool,
    typer.Option(
        "--skip-endpoint-check",
        help="Do not send the one live request per endpoint that preflight sends.",
    ),
]
Retries = Annotated[
    int,
    typer.Option(
        "--retries",
        min=0,
        metavar="N",
        help="Rerun a trial that ended in a harness error (provider, stack, …) up to N times.",
    ),
]
ProviderErrorLimit = Annotated[
    int,
    typer.Option(
        "--provider-error-limit",
        min=0,
        metavar="N",
        help="Stop starting trials after N in a row end in provider errors (0: never).",
    ),
]
MaxCostUsd = Annotated[
    float | None,
    typer.Option(
        "--max-cost-usd",
        metavar="USD",
        help="Start no new trial once the run has cost this many USD.  [default: no cap]",
    ),
]
HardCostCap = Annotated[
    bool, typer.Option("--hard-cost-cap", help="At --max-cost-usd, cancel the trials in flight.")
]


def run_controls(
    retries: int, provider_error_limit: int, max_cost_usd: float | None, hard_cost_cap: bool
) -> RunControls:
    """The run controls those options give (exit 1 on a combination that makes no sense)."""
    if max_cost_usd is not None and not max_cost_usd > 0:
        fail(f"--max-cost-usd must be > 0 (got {max_cost_usd:g})")
    if hard_cost_cap and max_cost_usd is None:
        fail("--hard-cost-cap needs --max-cost-usd")
    return RunControls.of(
        retries=retries,
        provider_error_limit=provider_error_limit,
        max_cost_usd=max_cost_usd,
        hard_cost_cap=hard_cost_cap,
    )
