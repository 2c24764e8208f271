"""`RunConfig`: every option of a `benchmark` or `resume` run, declared once.

The command line, a `--config` file (YAML or JSON) and a run's `run.json` all fill this one
model; the driver (`orchestra.run`), the jobs, the executors and each trial read their part of
it. A job's `config.json` stores it too (`options`), so a job from before runs resumes the same
way. Documents written before this model existed kept the trial knobs at the top level and the
task selection beside the settings: `RunConfig` reads them as they are (see `_nest_legacy`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self

import yaml
from pydantic import Field, ValidationError, model_validator

from orchestra.config.errors import TOP_LEVEL, ConfigError, display_path, from_validation_error
from orchestra.config.task import Layer
from orchestra.documents.enums import EnvKind, ExecutorKind, StackMode
from orchestra.documents.trial import Attempt, Part
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
#: a trial that ends in a harness error is rerun this many times (issue 13)
DEFAULT_RETRIES = 1
#: provider errors in a row that stop a run (issue 13)
DEFAULT_PROVIDER_ERROR_LIMIT = 3

#: `auto`: the stack (or env) is chosen when the run starts (§5.1)
Auto = Literal["auto"]
AUTO: Auto = "auto"
StackChoice = StackMode | Auto
EnvChoice = EnvKind | Auto
Port = Annotated[int, Field(ge=1, le=65535)]
Positive = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
SettleMs = Annotated[int, Field(ge=0, le=MAX_SETTLE_MS)]


class TaskSelection(Part):
    """Which tasks run (§2.2): the dataset and the filters, as given; `attempts` None means
    the per-layer defaults."""

    path: Path | None = None  # a task or dataset directory; None: tasks/buzz-native
    layer: Layer | None = None
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    attempts: Attempt | None = None


class TrialSettings(Part):
    """The knobs every trial reads (the part a Ray node host is given)."""

    timeout_multiplier: Annotated[float, Field(gt=0)] = 1.0
    keep_channels: bool = False
    keep_containers: bool = False  # docker env: trial containers outlive their trials
    settle_ms: SettleMs = DEFAULT_SETTLE_MS
    buzz_bin_dir: Path | None = None  # None: this package's scripts


class RunConfig(Part):
    """One run's options. Those marked `exclude` concern only the command that runs it: they
    are not stored, so a resume starts from their defaults."""

    selection: TaskSelection = Field(default_factory=TaskSelection)
    manifest: Path = DEFAULT_MANIFEST
    endpoint_config: Path = DEFAULT_ENDPOINT_CONFIG
    artifact_root: Path | None = None  # None: the parent of the manifest's directory
    n_concurrent: Positive = 4  # trials in flight at once
    jobs_dir: Path = DEFAULT_JOBS_DIR
    run_name: str | None = None
    job_name: str | None = None
    stack: StackChoice = AUTO
    env: EnvChoice = AUTO
    relay_url: str | None = None  # external stack only
    database_url: str | None = None  # stored only when it carries no password
    relay_port: Port = DEFAULT_RELAY_PORT
    state_dir: Path = DEFAULT_STATE_DIR
    trial: TrialSettings = Field(default_factory=TrialSettings)
    report: bool = False
    retries: Count = DEFAULT_RETRIES
    provider_error_limit: Count = DEFAULT_PROVIDER_ERROR_LIMIT
    max_cost_usd: Annotated[float, Field(gt=0)] | None = None
    hard_cost_cap: bool = False
    executor: ExecutorKind = ExecutorKind.LOCAL
    ray_address: str | None = None
    ray_slots_per_node: Positive | None = None
    # confirmation reruns (issue 29 item 5): a task that regresses against this baseline (a
    # run or job directory, or a report.json) gets up to `confirm_attempts` extra attempts
    confirm_against: Path | None = None
    confirm_attempts: Positive = 4
    confirm_target: Annotated[float, Field(gt=0, lt=1)] = 0.8
    # ... or against the condition's recent runs in a results database (docs/results-db.md
    # "History as the baseline"): up to `history_runs` runs pooled per task
    baseline_history: Path | None = None
    history_runs: Positive = 30
    fail_below_target: bool = False  # a miss of `confirm_target` also exits 3
    # --- this command only ---
    new_run: bool = Field(default=False, exclude=True)
    keep_errors: bool = Field(default=False, exclude=True)
    quiet: bool = Field(default=False, exclude=True)
    fresh: bool = Field(default=False, exclude=True)  # docker stack: recreate its volume
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


def load_run_config(path: Path) -> RunConfig:
    """A `--config` file (YAML, or JSON, which YAML reads too); `ConfigError` naming the file
    and the field (with a suggestion for a misspelt option)."""
    shown = display_path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(shown, "", f"cannot read ({error.strerror or error})") from None
    except yaml.YAMLError as error:
        raise ConfigError(shown, "", f"not valid YAML or JSON ({error})") from None
    if not isinstance(data, dict):
        raise ConfigError(shown, "", "must be a mapping of option names to values")
    try:
        return RunConfig.model_validate_json(json.dumps(data))
    except (TypeError, ValueError) as error:
        if not isinstance(error, ValidationError):
            raise ConfigError(shown, "", f"not a plain YAML value ({error})") from None
        first = from_validation_error(shown, error)[0]
        problem = first.problem
        if error.errors()[0]["type"] == "extra_forbidden":
            problem = "unknown option" + _did_you_mean(first.field)
        field = "" if first.field == TOP_LEVEL else first.field
        raise ConfigError(first.file, field, problem) from None


def _did_you_mean(field: str) -> str:
    leaf = field.rpartition(".")[2]
    known = [*RunConfig.model_fields, *OPTION_PATHS]
    close = difflib.get_close_matches(leaf, known, n=1)
    return f" (did you mean {'.'.join(OPTION_PATHS.get(close[0], (close[0],)))}?)" if close else ""


def options_problem(error: ValidationError, file: Path | None = None) -> str:
    """One line for options that do not validate: the file when there is one, the option
    unless the problem names it (`hard_cost_cap needs max_cost_usd`)."""
    first = from_validation_error(display_path(file) if file else "", error)[0]
    where = [first.file] if file is not None else []
    where += [first.field] if first.field != TOP_LEVEL else []
    return ": ".join([*where, first.problem])
