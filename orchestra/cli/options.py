"""Every option of `benchmark` and `resume` (and those `stack` shares), each declared once as a
typer alias over its `RunConfig` field (orchestrator.md §2.2).

A command's parameter is named as the field it sets (`n_concurrent`, `settle_ms`), so
`given_options` turns what the command line gave into `RunConfig.updated`'s input, and
`resume_args` turns a changed option back into its flag. A default that is not a value (None
meaning "the run's" or "every task") is written into the help text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from typer._click.core import ParameterSource  # typer >= 0.26 vendors click
from typer.models import OptionInfo

from orchestra.config.task import LAYERS
from orchestra.documents.enums import EnvKind, ExecutorKind, StackMode
from orchestra.documents.run_config import AUTO, MAX_SETTLE_MS, OPTION_PATHS, StackChoice


def choice(values: Iterable[str]) -> Callable[[str], str]:
    """A parser accepting exactly `values` (the enums' own, so each list is written once)."""
    allowed = [str(value) for value in values]

    def parse(value: str) -> str:
        if value not in allowed:
            shown = ", ".join(repr(allowed_value) for allowed_value in allowed)
            raise typer.BadParameter(f"{value!r} is not one of {shown}")
        return value

    return parse


def metavar(values: Iterable[str]) -> str:
    return "[" + "|".join(values) + "]"


STACK_VALUES = (AUTO, *StackMode)
ENV_VALUES = (AUTO, *EnvKind)
STACK_HELP = (
    "Where the relay and its database run: docker (compose), embedded (no Docker: a local "
    "PostgreSQL and relay subprocess) or external (--relay-url); auto picks docker when a "
    "Docker engine answers, else embedded."
)
ENV_HELP = (
    "Where agents and verifiers run: docker (a container per trial) or local (a sandbox "
    "directory on this host); auto follows the stack."
)

# --- what to run -------------------------------------------------------------------------------

ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="Read the run's options from FILE (YAML or JSON, as --print-config writes them); "
        "options given on the command line win.",
    ),
]
PrintConfig = Annotated[
    bool,
    typer.Option("--print-config", help="Print the options in effect (YAML) and exit."),
]
TaskPath = Annotated[
    Path | None,
    typer.Option(
        "--path",
        "-p",
        metavar="PATH",
        help="A task directory (holds task.toml) or a dataset directory (its subdirectories "
        "are tasks).  [default: tasks/buzz-native]",
    ),
]
Dataset = Annotated[
    str | None,
    typer.Option(
        "--dataset",
        "-d",
        metavar="PATH",
        help="Like --path, for Harbor familiarity: a local dataset directory only.",
    ),
]
Include = Annotated[
    list[str] | None,
    typer.Option(
        "--include-task",
        "-i",
        metavar="GLOB",
        help="Keep only tasks whose name or directory matches GLOB (shell-style, "
        "case-sensitive); repeatable.  [default: every task]",
    ),
]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude-task",
        "-x",
        metavar="GLOB",
        help="Drop tasks matching GLOB; repeatable, applied after --include-task.",
    ),
]
Layer = Annotated[
    str | None,
    typer.Option(
        "--layer",
        parser=choice(LAYERS),
        metavar=metavar(LAYERS),
        help="Keep only the tasks of this evaluation layer.  [default: all]",
    ),
]
Attempts = Annotated[
    int | None,
    typer.Option(
        "--attempts",
        "-k",
        min=1,
        metavar="N",
        help="Attempts per task, one job for every task.  [default: per layer: regression "
        "1, workflow 3, harbor 5, one job per layer selected]",
    ),
]
Manifest = Annotated[
    Path | None,
    typer.Option(
        "--manifest",
        metavar="PATH",
        help="Condition manifest (YAML): the agents, models and prompts; the default, the "
        "oracle, replays the reference solutions offline.",
    ),
]
EndpointConfig = Annotated[
    Path | None,
    typer.Option(
        "--endpoint-config",
        metavar="PATH",
        help="Endpoint config (JSON) defining every model endpoint the manifest uses.",
    ),
]
ArtifactRoot = Annotated[
    Path | None,
    typer.Option(
        "--artifact-root",
        metavar="DIR",
        help="Root the manifest's prompt, persona and skill paths resolve against.  "
        "[default: the parent of the manifest's directory]",
    ),
]

# --- where the run's files go ------------------------------------------------------------------

JobsDir = Annotated[
    Path | None,
    typer.Option("--jobs-dir", metavar="DIR", help="Parent directory of run directories."),
]
JobName = Annotated[
    str | None,
    typer.Option(
        "--job-name",
        metavar="NAME",
        help="Job directory name inside the run: the name itself for a one-job plan, the "
        "base of <name>-regression / <name>-workflow for two.  [default: the run name]",
    ),
]
RunName = Annotated[
    str | None,
    typer.Option(
        "--run-name",
        metavar="NAME",
        help="Run directory name under --jobs-dir; an existing run of that name and plan is "
        "resumed.  [default: --job-name, else <condition>-<UTC stamp>]",
    ),
]
NewRun = Annotated[
    bool,
    typer.Option(
        "--new-run",
        help="Start a new run even when an unfinished run of the same plan exists "
        "(default: resume the most recent one).",
    ),
]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Make every check that needs no stack, print the run and plan, start nothing.",
    ),
]
AllowMissingKeys = Annotated[
    bool,
    typer.Option(
        "--allow-missing-keys",
        help="With --dry-run: report missing API keys as warnings, not errors.",
    ),
]

# --- how it runs --------------------------------------------------------------------------------

NConcurrent = Annotated[
    int | None,
    typer.Option(
        "--n-concurrent",
        "-n",
        min=1,
        metavar="N",
        help="Trials in flight at once; 1 is the safe laptop setting.",
    ),
]
Stack = Annotated[
    str | None,
    typer.Option(
        "--stack", parser=choice(STACK_VALUES), metavar=metavar(STACK_VALUES), help=STACK_HELP
    ),
]
Env = Annotated[
    str | None,
    typer.Option("--env", parser=choice(ENV_VALUES), metavar=metavar(ENV_VALUES), help=ENV_HELP),
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
RelayPort = Annotated[
    int | None,
    typer.Option(
        "--relay-port",
        min=1,
        max=65535,
        metavar="PORT",
        help="Embedded stack: the port the relay binds on 127.0.0.1.",
    ),
]
StateDir = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        metavar="DIR",
        help="Persistent secrets (the pinned user key), the wheelhouse and embedded-stack data.",
    ),
]
Fresh = Annotated[
    bool,
    typer.Option(
        "--fresh",
        help="Docker stack only: recreate its database volume first (secrets are kept).",
    ),
]
BuzzBinDir = Annotated[
    Path | None,
    typer.Option(
        "--buzz-bin-dir",
        metavar="DIR",
        help="Experimental: run buzz-acp, buzz-agent and buzz-dev-mcp from DIR.  "
        "[default: this package's scripts]",
    ),
]
TimeoutMultiplier = Annotated[
    float | None,
    typer.Option(
        "--timeout-multiplier",
        metavar="X",
        help="Scale every task's agent and verifier time limits (a number > 0).",
    ),
]
KeepChannels = Annotated[
    bool, typer.Option("--keep-channels", help="Leave trial channels unarchived at teardown.")
]
KeepContainers = Annotated[
    bool,
    typer.Option(
        "--keep-containers",
        help="Docker env: keep each trial's agents' and verifier containers for debugging.",
    ),
]
SettleMs = Annotated[
    int | None,
    typer.Option(
        "--settle-ms",
        min=0,
        max=MAX_SETTLE_MS,
        metavar="MS",
        help="Grace after a solo agent's last turn before the trial stops (§7.11).",
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
Report = Annotated[
    bool,
    typer.Option(
        "--report",
        help="Write report.json, junit.xml and report.html into the run directory (reports "
        "that exist are always rewritten).",
    ),
]
CheckEndpoints = Annotated[
    bool,
    typer.Option("--check-endpoints", help="With --dry-run: also send the live endpoint check."),
]

# What may stop or rerun trials (issue 13).
SkipEndpointCheck = Annotated[
    bool,
    typer.Option(
        "--skip-endpoint-check",
        help="Do not send the one live request per endpoint that preflight sends.",
    ),
]
Retries = Annotated[
    int | None,
    typer.Option(
        "--retries",
        min=0,
        metavar="N",
        help="Rerun a trial that ended in a harness error (provider, stack, …) up to N times.",
    ),
]
ProviderErrorLimit = Annotated[
    int | None,
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

# Where the trials run (scale-out.md §1).
Executor = Annotated[
    str | None,
    typer.Option(
        "--executor",
        parser=choice(ExecutorKind),
        metavar=metavar(ExecutorKind),
        help="Where trials run: local (this process) or ray (the nodes of a Ray cluster that "
        "offer buzz_trial slots; needs the ray extra).",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="ADDR",
        help="--executor ray: the cluster to join (ray.init address).  "
        "[default: $RAY_ADDRESS, else auto]",
    ),
]
RaySlotsPerNode = Annotated[
    int | None,
    typer.Option(
        "--ray-slots-per-node",
        min=1,
        metavar="N",
        help="--executor ray, development only: start a throwaway one-node local cluster with "
        "N buzz_trial slots instead of joining one.",
    ),
]

# Confirmation reruns (issue 29 item 5; docs/statistics.md "Confirmation reruns").
ConfirmAgainst = Annotated[
    Path | None,
    typer.Option(
        "--confirm-against",
        metavar="BASELINE",
        help="Compare each task as it finishes against this baseline (a run or job directory, "
        "or a report.json); a task that regresses gets extra attempts that confirm it or call "
        "it noise (exit 3 on a confirmed regression).",
    ),
]
ConfirmAttempts = Annotated[
    int | None,
    typer.Option(
        "--confirm-attempts",
        min=1,
        metavar="N",
        help="--confirm-against: at most N extra attempts per regressed task (fewer once the "
        "verdict cannot change).  [default: 4]",
    ),
]
ConfirmTarget = Annotated[
    float | None,
    typer.Option(
        "--confirm-target",
        min=0.0,
        max=1.0,
        metavar="P",
        help="--confirm-against: the reliability target a task's attempts are tested against "
        "(one-sided exact binomial; below it: 'below contract').  [default: 0.8]",
    ),
]

BaselineHistory = Annotated[
    Path | None,
    typer.Option(
        "--baseline-history",
        metavar="DB",
        help="Confirm as --confirm-against does, against each task's recent runs in this "
        "results database (`orchestra db`): runs of this condition with this manifest, timeout "
        "multiplier and task files, pooled per task.",
    ),
]
HistoryRuns = Annotated[
    int | None,
    typer.Option(
        "--history-runs",
        min=1,
        metavar="N",
        help="--baseline-history: pool at most the N latest runs.  [default: 30]",
    ),
]
FailBelowTarget = Annotated[
    bool,
    typer.Option(
        "--fail-below-target",
        help="Exit 3 also when a confirmed task holds less often than --confirm-target (a "
        "finding shown apart, never a regression).",
    ),
]

#: the options `orchestra resume` takes, by the `RunConfig` field each sets
RESUME_OPTIONS: dict[str, Any] = {
    "n_concurrent": NConcurrent,
    "keep_errors": KeepErrors,
    "endpoint_config": EndpointConfig,
    "stack": Stack,
    "env": Env,
    "relay_url": RelayUrl,
    "database_url": DatabaseUrl,
    "relay_port": RelayPort,
    "state_dir": StateDir,
    "timeout_multiplier": TimeoutMultiplier,
    "buzz_bin_dir": BuzzBinDir,
    "settle_ms": SettleMs,
    "report": Report,
    "quiet": Quiet,
    "retries": Retries,
    "provider_error_limit": ProviderErrorLimit,
    "max_cost_usd": MaxCostUsd,
    "hard_cost_cap": HardCostCap,
    "executor": Executor,
    "ray_address": RayAddress,
    "ray_slots_per_node": RaySlotsPerNode,
}


def stack_choice(value: str | None) -> StackChoice:
    """`--stack` as `RunConfig` holds it (for commands that read it alone)."""
    return AUTO if value in (None, AUTO) else StackMode(value)


def flag(alias: Any) -> str:
    """The long flag of an option alias (`--n-concurrent`)."""
    info = next(arg for arg in get_args(alias) if isinstance(arg, OptionInfo))
    # in an `Annotated` alias the first flag is typer's `default` argument
    decls = [info.default, *(info.param_decls or ())]
    return next(decl for decl in decls if isinstance(decl, str) and decl.startswith("--"))


def given_options(ctx: typer.Context, values: Mapping[str, Any]) -> dict[str, Any]:
    """The `RunConfig` options among `values` that the command line gave (not defaults)."""
    given = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    return {
        name: value
        for name, value in values.items()
        if name in OPTION_PATHS and ctx.get_parameter_source(name) in given
    }
