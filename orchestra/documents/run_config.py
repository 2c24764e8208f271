"""`RunConfig`: every option of a `benchmark` or `resume` run, declared once: its field holds
its help, bounds, flags and whether `resume` takes it (`orchestra.documents.options`), and the
commands' parameters are built from it (`orchestra.cli.options`).

The command line, a `--config` file (YAML or JSON) and a run's `run.json` all fill this one
model; the driver (`orchestra.run`), the jobs, the executors and each trial read their part of
it. A job's `config.json` stores it too (`options`), so a job from before runs resumes the same
way. Documents written before this model existed kept the trial knobs at the top level and the
task selection beside the settings: `RunConfig` reads them as they are (see `_nest_legacy`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from orchestra.config.task import Layer
from orchestra.documents.enums import EnvKind, ExecutorKind, StackMode
from orchestra.documents.options import option
from orchestra.documents.trial import Part
from orchestra.paths import (
    DEFAULT_ENDPOINT_CONFIG,
    DEFAULT_JOBS_DIR,
    DEFAULT_MANIFEST,
    DEFAULT_STATE_DIR,
)

#: `--settle-ms`: the solo settle grace's default and upper bound (orchestrator.md §2.2, §7.11)
DEFAULT_SETTLE_MS = 250
MAX_SETTLE_MS = 5000
DEFAULT_RELAY_PORT = 3600
#: a trial that ends in a harness error is rerun this many times
DEFAULT_RETRIES = 1
#: provider errors in a row that stop a run
DEFAULT_PROVIDER_ERROR_LIMIT = 3

#: `auto`: the stack (or env) is chosen when the run starts (§5.1)
Auto = Literal["auto"]
AUTO: Auto = "auto"
StackChoice = StackMode | Auto
EnvChoice = EnvKind | Auto

STACK_HELP = (
    "Where the relay and its database run: docker (compose), embedded (no Docker: a local "
    "PostgreSQL and relay subprocess) or external (--relay-url); auto picks docker when a "
    "Docker engine answers, else embedded."
)


class TaskSelection(Part):
    """Which tasks run (§2.2): the task or dataset directories (none: tasks/buzz-native) and
    the filters, as given; `attempts` None means the per-layer defaults."""

    paths: list[Path] = option(
        None, "--path", "-p", metavar="PATH", default_factory=list,
        default_note="tasks/buzz-native",
        description="A task directory (holds task.toml) or a dataset directory (its "
        "subdirectories are tasks); repeatable: one plan over the tasks of every PATH.",
    )  # fmt: skip
    layer: Layer | None = option(
        None, "--layer", default_note="all",
        description="Keep only the tasks of this evaluation layer.",
    )  # fmt: skip
    include: list[str] = option(
        None, "--include-task", "-i", metavar="GLOB", default_factory=list,
        default_note="every task",
        description="Keep only tasks whose name or directory matches GLOB (shell-style, "
        "case-sensitive); repeatable.",
    )  # fmt: skip
    exclude: list[str] = option(
        None, "--exclude-task", "-x", metavar="GLOB", default_factory=list,
        description="Drop tasks matching GLOB; repeatable, applied after --include-task.",
    )  # fmt: skip
    attempts: int | None = option(
        None, "--attempts", "-k", metavar="N", ge=1,
        default_note="per layer: regression 1, workflow 3, harbor 5, one job per layer "
        "selected",
        description="Attempts per task, one job for every task.",
    )  # fmt: skip

    @model_validator(mode="before")
    @classmethod
    def _one_path(cls, data: Any) -> Any:
        """Before `-p` was repeatable, a selection held one `path` (None: the default)."""
        if not isinstance(data, dict) or "path" not in data:
            return data
        rest = {key: value for key, value in data.items() if key != "path"}
        return {"paths": [] if data["path"] is None else [data["path"]], **rest}


class TrialSettings(Part):
    """The knobs every trial reads (the part a Ray node host is given)."""

    timeout_multiplier: float = option(
        1.0, "--timeout-multiplier", metavar="X", gt=0, resumable=True,
        description="Scale every task's agent and verifier time limits.",
    )  # fmt: skip
    keep_channels: bool = option(
        False, "--keep-channels", description="Leave trial channels unarchived at teardown."
    )
    keep_containers: bool = option(
        False, "--keep-containers",
        description="Docker env: keep each trial's agents' and verifier containers for "
        "debugging.",
    )  # fmt: skip
    settle_ms: int = option(
        DEFAULT_SETTLE_MS, "--settle-ms", metavar="MS", ge=0, le=MAX_SETTLE_MS, resumable=True,
        description="Grace after a solo agent's last turn before the trial stops (§7.11).",
    )  # fmt: skip
    max_repeated_calls: int = option(
        0, "--max-repeated-calls", metavar="N", ge=0, default_note="no limit",
        description="End an agent's turn (scored, as the model's) once it made the same tool "
        "call with the same arguments N times in a row; 0: no limit. Five in a row flag the "
        "trial `looping` either way.",
    )  # fmt: skip
    buzz_bin_dir: Path | None = option(
        None, "--buzz-bin-dir", metavar="DIR", resumable=True,
        default_note="this package's scripts",
        description="Experimental: run buzz-acp, buzz-agent and buzz-dev-mcp from DIR.",
    )  # fmt: skip


class RunConfig(Part):
    """One run's options. Those marked `exclude` concern only the command that runs it: they
    are not stored, so a resume starts from their defaults."""

    selection: TaskSelection = Field(default_factory=TaskSelection)
    manifest: Path = option(
        DEFAULT_MANIFEST, "--manifest", metavar="PATH",
        description="Condition manifest (YAML): the agents, models and prompts; the default, "
        "the oracle, replays the reference solutions offline.",
    )  # fmt: skip
    endpoint_config: Path = option(
        DEFAULT_ENDPOINT_CONFIG, "--endpoint-config", metavar="PATH", resumable=True,
        description="Endpoint config (JSON) defining every model endpoint the manifest uses.",
    )  # fmt: skip
    artifact_root: Path | None = option(
        None, "--artifact-root", metavar="DIR",
        default_note="the parent of the manifest's directory",
        description="Root the manifest's prompt, persona and skill paths resolve against.",
    )  # fmt: skip
    n_concurrent: int = option(
        4, "--n-concurrent", "-n", metavar="N", ge=1, resumable=True,
        description="Trials in flight at once; 1 is the safe laptop setting.",
    )  # fmt: skip
    jobs_dir: Path = option(
        DEFAULT_JOBS_DIR, "--jobs-dir", metavar="DIR",
        description="Parent directory of run directories.",
    )  # fmt: skip
    run_name: str | None = option(
        None, "--run-name", metavar="NAME", default_note="--job-name, else <condition>-<UTC "
        "stamp>",
        description="Run directory name under --jobs-dir (benchmark: an existing run of that "
        "name and plan is resumed).",
    )  # fmt: skip
    job_name: str | None = option(
        None, "--job-name", metavar="NAME", default_note="the run name",
        description="Job directory name inside the run: the name itself for a one-job plan, "
        "the base of <name>-regression / <name>-workflow for two.",
    )  # fmt: skip
    stack: StackChoice = option(AUTO, "--stack", resumable=True, description=STACK_HELP)
    env: EnvChoice = option(
        AUTO, "--env", resumable=True,
        description="Where agents and verifiers run: docker (a container per trial) or local "
        "(a sandbox directory on this host); auto follows the stack.",
    )  # fmt: skip
    relay_url: str | None = option(
        None, "--relay-url", metavar="URL", resumable=True,
        description="External stack: the relay's ws:// or wss:// URL (implies --stack "
        "external).",
    )  # fmt: skip
    database_url: str | None = option(  # stored only when it carries no password
        None, "--database-url", metavar="URL", resumable=True,
        description="External stack: PostgreSQL URL for health checks and the trial registry "
        "(optional).",
    )  # fmt: skip
    relay_port: int = option(
        DEFAULT_RELAY_PORT, "--relay-port", metavar="PORT", ge=1, le=65535, resumable=True,
        description="Embedded stack: the port the relay binds on 127.0.0.1.",
    )  # fmt: skip
    state_dir: Path = option(
        DEFAULT_STATE_DIR, "--state-dir", metavar="DIR", resumable=True,
        description="Persistent secrets (the pinned user key), the wheelhouse and "
        "embedded-stack data.",
    )  # fmt: skip
    trial: TrialSettings = Field(default_factory=TrialSettings)
    report: bool = option(
        False, "--report", resumable=True,
        description="Write report.json, junit.xml and report.html into the run directory "
        "(reports that exist are always rewritten).",
    )  # fmt: skip
    retries: int = option(
        DEFAULT_RETRIES, "--retries", metavar="N", ge=0, resumable=True,
        description="Rerun a trial that ended in a harness error (provider, stack, …) up to "
        "N times.",
    )  # fmt: skip
    provider_error_limit: int = option(
        DEFAULT_PROVIDER_ERROR_LIMIT, "--provider-error-limit", metavar="N", ge=0,
        resumable=True,
        description="Stop starting trials after N in a row end in provider errors (0: never).",
    )  # fmt: skip
    max_cost_usd: float | None = option(
        None, "--max-cost-usd", metavar="USD", gt=0, resumable=True, default_note="no cap",
        description="Start no new trial once the run has cost this many USD.",
    )  # fmt: skip
    hard_cost_cap: bool = option(
        False, "--hard-cost-cap", resumable=True,
        description="At --max-cost-usd, cancel the trials in flight.",
    )  # fmt: skip
    # where the trials run (scale-out.md §1)
    executor: ExecutorKind = option(
        ExecutorKind.LOCAL, "--executor", resumable=True,
        description="Where trials run: local (this process) or ray (the nodes of a Ray "
        "cluster that offer buzz_trial slots; needs the ray extra).",
    )  # fmt: skip
    ray_address: str | None = option(
        None, "--ray-address", metavar="ADDR", resumable=True,
        default_note="$RAY_ADDRESS, else auto",
        description="--executor ray: the cluster to join (ray.init address).",
    )  # fmt: skip
    ray_slots_per_node: int | None = option(
        None, "--ray-slots-per-node", metavar="N", ge=1, resumable=True,
        description="--executor ray, development only: start a throwaway one-node local "
        "cluster with N buzz_trial slots instead of joining one.",
    )  # fmt: skip
    # confirmation reruns (docs/statistics.md "Confirmation reruns"): a task that regresses
    # against this baseline gets up to `confirm_attempts` extra attempts
    confirm_against: Path | None = option(
        None, "--confirm-against", metavar="BASELINE",
        description="Compare each task as it finishes against this baseline (a run or job "
        "directory, or a report.json); a task that regresses gets extra attempts that confirm "
        "it or call it noise (exit 3 on a confirmed regression).",
    )  # fmt: skip
    confirm_attempts: int = option(
        4, "--confirm-attempts", metavar="N", ge=1,
        description="--confirm-against: at most N extra attempts per regressed task (fewer "
        "once the verdict cannot change).",
    )  # fmt: skip
    confirm_target: float = option(
        0.8, "--confirm-target", metavar="P", gt=0, lt=1,
        description="The reliability target a confirmed task's attempts are tested against "
        "(one-sided exact binomial; below it: a finding shown apart, never a regression).",
    )  # fmt: skip
    # ... or against the condition's recent runs in a results database (docs/results-db.md
    # "History as the baseline"): up to `history_runs` runs pooled per task
    baseline_history: Path | None = option(
        None, "--baseline-history", metavar="DB",
        description="Take each task's baseline from the condition's recent runs in this "
        "results database (`orchestra db`), pooled only where manifest, timeout multiplier and "
        "task files match (benchmark: confirm as --confirm-against does).",
    )  # fmt: skip
    history_runs: int = option(
        30, "--history-runs", metavar="N", ge=1,
        description="--baseline-history: pool at most the N latest runs.",
    )  # fmt: skip
    fail_below_target: bool = option(
        False, "--fail-below-target",
        description="Exit 3 also when a confirmed task holds less often than --confirm-target "
        "(a finding shown apart, never a regression).",
    )  # fmt: skip
    # --- this command only ---
    new_run: bool = option(
        False, "--new-run", exclude=True,
        description="Start a new run even when an unfinished run of the same plan exists "
        "(default: resume the most recent one).",
    )  # fmt: skip
    keep_errors: bool = option(
        False, "--keep-errors", exclude=True, resumable=True,
        description="When resuming, keep trials that ended in error instead of re-running "
        "them.",
    )  # fmt: skip
    quiet: bool = option(
        False, "--quiet", "-q", exclude=True, resumable=True,
        description="Only the overall progress line, no per-trial lines.",
    )  # fmt: skip
    fresh: bool = option(
        False, "--fresh", exclude=True,
        description="Docker stack only: recreate its database volume first (secrets are "
        "kept).",
    )  # fmt: skip
    strict_endpoints: bool = option(
        False, "--strict-endpoints", exclude=True, resumable=True,
        description="Refuse the run (exit 2) on any warning of the endpoint check: no "
        "structured tool call back, a reply the server could not parse, a per-request context "
        "window below the manifest's context_window_tokens.",
    )  # fmt: skip
    smoke: bool = option(
        False, "--smoke", exclude=True,
        description="Before the plan, run one trial of its first task with the whole roster "
        "(in <run>/smoke/, never counted in the rates), print the plan's extrapolated cost "
        "and wall time, and stop (exit 2, no planned trial started) unless every seat acted: "
        "called a tool and posted.",
    )  # fmt: skip
    no_floor: bool = option(
        False, "--no-floor", exclude=True, resumable=True,
        description="Do not compute the do-nothing floor: by default, a model condition's run "
        "first runs each task whose floor is not cached once with every seat on the null "
        "endpoint (in <run>/floor/, never counted in the rates) and shows what doing nothing "
        "scores beside the condition.",
    )  # fmt: skip
    #: the live endpoint check before the first trial (`--check-endpoints` on a dry run,
    #: `--skip-endpoint-check` on a real one: the commands' own flags)
    check_endpoints: bool = Field(default=True, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _nest_legacy(cls, data: Any) -> Any:
        """Before RunConfig, `run.json`'s `settings` and `config.json`'s `options` held the
        trial knobs at the top level."""
        if not isinstance(data, dict):
            return data
        flat = {key: data[key] for key in TrialSettings.model_fields if key in data}
        if not flat:
            return data
        rest = {key: value for key, value in data.items() if key not in flat}
        return rest | {"trial": {**rest.get("trial", {}), **flat}}

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.hard_cost_cap and self.max_cost_usd is None:
            raise ValueError("hard_cost_cap needs max_cost_usd")
        for name in ("ray_address", "ray_slots_per_node"):
            if self.executor is ExecutorKind.LOCAL and getattr(self, name) is not None:
                raise ValueError(f"{name} goes with executor ray")
        if self.ray_address is not None and self.ray_slots_per_node is not None:
            raise ValueError(
                "ray_slots_per_node starts a local cluster; it cannot go with ray_address"
            )
        if self.confirm_against is not None and self.baseline_history is not None:
            raise ValueError(
                "confirm_against and baseline_history are two baselines; give one of them"
            )
        return self

    def updated(self, given: Mapping[str, Any]) -> RunConfig:
        """This config with the options in `given` (by field name, nested ones by their own
        name, e.g. `settle_ms`) replaced and the whole validated again (`ValueError`)."""
        data = self.model_dump(mode="json", exclude_unset=False) | self.command_options()
        for name, value in given.items():
            *groups, leaf = OPTION_PATHS[name]
            target = data
            for group in groups:
                target = target.setdefault(group, {})
            target[leaf] = _jsonable(value)
        return RunConfig.model_validate_json(json.dumps(data))

    def option_value(self, name: str) -> Any:
        """The value of the option `name` (a nested one by its own name, e.g. `settle_ms`)."""
        value: Any = self
        for part in OPTION_PATHS[name]:
            value = getattr(value, part)
        return value

    def stored(self) -> RunConfig:
        """This config as a document stores it: the command's own options at their defaults."""
        return RunConfig.model_validate_json(self.model_dump_json())

    def command_options(self) -> dict[str, Any]:
        """The options that are not stored (`exclude`), as `model_dump` leaves them out."""
        return {
            name: getattr(self, name)
            for name, field in RunConfig.model_fields.items()
            if field.exclude
        }

    def shown(self) -> dict[str, Any]:
        """Every option, as `--print-config` shows it and `--config` reads it."""
        return self.model_dump(mode="json") | self.command_options()


def option_paths() -> dict[str, tuple[str, ...]]:
    """Each option's name -> where it lives in `RunConfig` (names are unique across groups)."""
    paths: dict[str, tuple[str, ...]] = {}
    for name, field in RunConfig.model_fields.items():
        group = field.annotation if isinstance(field.annotation, type) else None
        if group is not None and issubclass(group, Part):
            paths |= {leaf: (name, leaf) for leaf in group.model_fields}
        else:
            paths[name] = (name,)
    return paths


OPTION_PATHS = option_paths()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, tuple | list):
        return [_jsonable(item) for item in value]
    return value
