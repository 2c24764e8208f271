"""Harbor-format tasks (docs/decisions.md D46): a task directory without `buzz-fixture.toml`.

Its `task.toml` is Harbor's (`harbor.models.task.config.TaskConfig`, the subset this orchestrator
can honour, unknown keys errors): `[task]` is optional (the name defaults to the directory
name), `[metadata]` is free-form apart from `evaluation_layer` (default `harbor`), and
`[environment]` may set the agents' working directory (`workdir`) and the verifier's variables
(`[verifier].env`). The task is validated into the same `TaskToml` the Buzz tasks have, plus
the few Harbor settings nothing else carries (`HarborSettings`).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestra.config.errors import ConfigError, display_path, from_validation_error, show_value
from orchestra.config.loading import load_toml
from orchestra.paths import TaskPaths

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

PositiveFloat = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
#: The layer of a Harbor task whose `[metadata]` names none.
HARBOR_LAYER: Final = "harbor"


class HarborAuthor(BaseModel):
    model_config = _STRICT

    name: str
    email: str | None = None


class HarborTaskInfo(BaseModel):
    model_config = _STRICT

    name: Annotated[str, Field(min_length=1)] | None = None
    version: str | None = None
    description: str = ""
    authors: list[HarborAuthor] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class HarborAgent(BaseModel):
    model_config = _STRICT

    timeout_sec: PositiveFloat | None = None


class HarborVerifier(BaseModel):
    model_config = _STRICT

    timeout_sec: PositiveFloat = 600.0
    env: dict[str, str] = Field(default_factory=dict)


class HarborEnvironment(BaseModel):
    model_config = _STRICT

    build_timeout_sec: PositiveFloat = 600.0
    cpus: PositiveInt | None = None
    memory_mb: PositiveInt | None = None
    storage_mb: PositiveInt | None = None
    gpus: Literal[0] | None = None
    network_mode: Literal["public", "no-network", "allowlist"] = "public"
    allow_internet: bool | None = None  # Harbor's deprecated spelling of network_mode
    workdir: str | None = None

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not PurePosixPath(value).is_absolute():
            raise ValueError(f"must be an absolute path (got {show_value(value)})")
        return value

    @property
    def effective_network_mode(self) -> str:
        return "no-network" if self.allow_internet is False else self.network_mode


class HarborTaskToml(BaseModel):
    model_config = _STRICT

    schema_version: str | None = None
    version: str | None = None  # Harbor's older name of schema_version
    source: str | None = None
    task: HarborTaskInfo = Field(default_factory=HarborTaskInfo)
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: HarborAgent = Field(default_factory=HarborAgent)
    verifier: HarborVerifier = Field(default_factory=HarborVerifier)
    environment: HarborEnvironment = Field(default_factory=HarborEnvironment)


@dataclass(frozen=True)
class HarborSettings:
    """What a Harbor task sets that a Buzz task has no field for."""

    #: `[environment].workdir`: the agents' and the verifier's working directory, instead of
    #: the image's WORKDIR
    workdir: PurePosixPath | None
    verifier_env: dict[str, str]  # `[verifier].env`, the verifier's variables


def load_harbor_toml(paths: TaskPaths) -> tuple[HarborTaskToml | None, list[ConfigError]]:
    """The validated `task.toml` of a Harbor task (None when invalid) and its problems."""
    shown = display_path(paths.task_toml)
    try:
        toml = HarborTaskToml.model_validate(load_toml(paths.task_toml))
    except ConfigError as exc:
        return None, list(exc.errors)
    except ValidationError as exc:
        return None, from_validation_error(shown, exc, toml_style=True, model=HarborTaskToml)
    return toml, []


def missing_harbor_files(paths: TaskPaths) -> list[ConfigError]:
    """The files every Harbor task has: its instruction, its image's Dockerfile, its test."""
    return [
        ConfigError(display_path(path), "", "missing (every Harbor task needs this file)")
        for path in (paths.instruction_md, paths.environment_dir / "Dockerfile", paths.test_sh)
        if not path.is_file()
    ]


def harbor_layer(toml: HarborTaskToml) -> Any:
    """`[metadata].evaluation_layer` as written (checked by the caller), else `harbor`."""
    return toml.metadata.get("evaluation_layer", HARBOR_LAYER)


def harbor_settings(toml: HarborTaskToml) -> HarborSettings:
    workdir = toml.environment.workdir
    return HarborSettings(
        workdir=None if workdir is None else PurePosixPath(workdir),
        verifier_env=dict(toml.verifier.env),
    )


#: Harbor's canary lines (data-provenance markers kept from agents): an HTML comment or a hash
#: comment that mentions "canary"
_CANARY_LINE = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)


def strip_canary(text: str) -> str:
    """The instruction without its leading canary lines and the blank lines after them
    (Harbor's `strip_canary`)."""
    lines = text.split("\n")
    index = 0
    while index < len(lines) and _CANARY_LINE.match(lines[index].strip()):
        index += 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    return "\n".join(lines[index:])


# --- Harbor's task checksum ------------------------------------------------------------------

HARBOR_IGNORE_FILE = ".harborignore"


def harbor_checksum(task_dir: Path) -> str:
    """`Task.checksum` of Harbor 0.25: `dirhash` (sha256, entries `name` and `data`, empty
    directories left out, links followed) of the task directory without its `.harborignore`
    files. (Harbor also drops what a `.harborignore` under `tests/` or `solution/` excludes;
    no task here has one, and their patterns are not interpreted.)"""
    digest = _dir_hash(task_dir)
    if digest is None:
        raise ValueError(f"{task_dir}: nothing to hash")
    return digest


def _dir_hash(directory: Path) -> str | None:
    entries = []
    for child in sorted(os.scandir(directory), key=lambda entry: entry.name):
        path = Path(child.path)
        if child.name == HARBOR_IGNORE_FILE:
            continue
        if path.is_dir():
            sub = _dir_hash(path)
            if sub is not None:
                entries.append(f"dirhash:{sub}\0name:{child.name}")
        elif path.is_file():
            data = hashlib.sha256(path.read_bytes()).hexdigest()
            entries.append(f"data:{data}\0name:{child.name}")
    if not entries:
        return None
    return hashlib.sha256("\0\0".join(sorted(entries)).encode("utf-8")).hexdigest()
