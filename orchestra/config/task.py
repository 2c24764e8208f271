"""Harbor-format task directories: `task.toml` (dataset.md §2.2) and the §2.3 validation."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestra.config.errors import (
    ConfigError,
    display_path,
    from_validation_error,
    raise_if_any,
    show_value,
)
from orchestra.config.fixture import Fixture, load_fixture
from orchestra.config.loading import load_toml
from orchestra.paths import TESTS_DIR_NAME, TaskPaths

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

Layer = Literal["regression", "workflow"]
LAYERS: tuple[Layer, ...] = ("regression", "workflow")
#: Attempts per task when `-k` is not given (§2.3 item 5).
LAYER_DEFAULT_ATTEMPTS: dict[str, int] = {"regression": 1, "workflow": 3}

PositiveFloat = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]


class Author(BaseModel):
    model_config = _STRICT

    name: str
    email: str | None = None


class TaskSection(BaseModel):
    model_config = _STRICT

    # checked by hand so the message is the one §2.3 specifies
    name: Any = None
    description: str = ""
    authors: list[Author] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class MetadataSection(BaseModel):
    model_config = _STRICT

    evaluation_layer: Any = None  # checked by hand, like [task].name
    difficulty: Literal["easy", "medium", "hard"] | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)


class TimeoutSection(BaseModel):
    model_config = _STRICT

    timeout_sec: PositiveFloat = 600.0


class EnvironmentSection(BaseModel):
    model_config = _STRICT

    network_mode: str = "public"
    cpus: PositiveInt = 1
    memory_mb: PositiveInt = 2048
    storage_mb: PositiveInt = 10240


class TaskToml(BaseModel):
    model_config = _STRICT

    schema_version: str = "1.3"
    task: TaskSection = Field(default_factory=TaskSection)
    metadata: MetadataSection = Field(default_factory=MetadataSection)
    agent: TimeoutSection = Field(default_factory=TimeoutSection)
    verifier: TimeoutSection = Field(default_factory=TimeoutSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)


@dataclass(frozen=True)
class Task:
    """A validated task directory."""

    dir: Path
    toml: TaskToml
    fixture: Fixture

    @property
    def paths(self) -> TaskPaths:
        return TaskPaths(self.dir)

    @property
    def name(self) -> str:
        """The full name, `[task].name`, e.g. `buzz-native/reply-to-thread`."""
        name: str = self.toml.task.name
        return name

    @property
    def short_name(self) -> str:
        """The directory basename, e.g. `reply-to-thread`."""
        return self.dir.name

    @property
    def layer(self) -> Layer:
        layer: Layer = self.toml.metadata.evaluation_layer
        return layer

    @functools.cached_property
    def _contents(self) -> TaskContents:
        return read_task_contents(self.dir)

    @property
    def digest(self) -> str:
        """`task_digest` as of the first use: the plan and every trial config of a job record
        the same value, and the files are hashed once instead of at every trial."""
        return self._contents.digest

    @property
    def tests(self) -> tuple[TaskFile, ...]:
        """The files of `tests/` as read with the digest (before any trial of the job starts):
        the pristine copy every verifier of the job runs, whatever happens to the directory
        later (orchestrator.md §9)."""
        return self._contents.tests

    def tests_changed_on_disk(self) -> list[str]:
        """Paths under `tests/` whose files on disk differ from `tests` (added, removed or
        rewritten since the copy was taken)."""
        now = {file.relative: file for file in read_task_contents(self.dir).tests}
        then = {file.relative: file for file in self.tests}
        return sorted(path for path in now.keys() | then.keys() if now.get(path) != then.get(path))

    def record(self) -> dict[str, str]:
        """`{name, short_name, dir, layer, digest}` as job and trial configs record it (§10.2)."""
        return {
            "name": self.name,
            "short_name": self.short_name,
            "dir": self.dir.absolute().as_posix(),
            "layer": self.layer,
            "digest": self.digest,
        }

    def instruction(self) -> str:
        """`instruction.md` as posted: UTF-8 with trailing whitespace removed (§7.2 step 11)."""
        return self.paths.instruction_md.read_text(encoding="utf-8").rstrip()


def load_task(task_dir: Path) -> Task:
    """Validate one task directory; every problem is reported together (§2.3 item 2)."""
    paths = TaskPaths(task_dir)
    shown = display_path(paths.task_toml)
    errors: list[ConfigError] = []
    toml: TaskToml | None = None
    try:
        toml = TaskToml.model_validate(load_toml(paths.task_toml))
    except ConfigError as exc:
        errors.extend(exc.errors)
    except ValidationError as exc:
        errors.extend(from_validation_error(shown, exc, toml_style=True))
    if toml is not None:
        errors.extend(_required_field_errors(shown, toml))
    errors.extend(_missing_file_errors(paths))
    fixture: Fixture | None = None
    try:
        fixture = load_fixture(task_dir)
    except ConfigError as exc:
        errors.extend(exc.errors)
    raise_if_any(errors)
    assert toml is not None and fixture is not None
    return Task(dir=task_dir, toml=toml, fixture=fixture)


def _required_field_errors(shown: str, toml: TaskToml) -> list[ConfigError]:
    errors: list[ConfigError] = []
    name = toml.task.name
    if not isinstance(name, str) or not name.strip():
        found = "missing" if name is None else f"got {show_value(name)}"
        errors.append(_inline(shown, "[task].name", f"must be a non-empty string ({found})"))
    layer = toml.metadata.evaluation_layer
    if layer not in LAYERS:
        found = "missing" if layer is None else f"got {show_value(layer)}"
        errors.append(
            _inline(
                shown,
                "[metadata].evaluation_layer",
                f'must be "regression" or "workflow" ({found})',
            )
        )
    return errors


def _inline(file: str, field: str, problem: str) -> ConfigError:
    # §2.3 phrases these as `<file>: <field> must be …` (no colon after the field)
    return ConfigError(file, field, problem, message=f"{file}: {field} {problem}")


def _missing_file_errors(paths: TaskPaths) -> list[ConfigError]:
    errors: list[ConfigError] = []
    for path, is_dir in (
        (paths.instruction_md, False),
        (paths.environment_dir, True),
        (paths.test_sh, False),
    ):
        ok = path.is_dir() if is_dir else path.is_file()
        if not ok:
            kind = "directory" if is_dir else "file"
            errors.append(
                ConfigError(display_path(path), "", f"missing (every task needs this {kind})")
            )
    return errors


#: Generated files that must not change a task's identity (a verifier test importing
#: `tests/verify.py` leaves `__pycache__` behind).
_DIGEST_IGNORED_DIRS = frozenset({"__pycache__", ".pytest_cache"})


@dataclass(frozen=True)
class TaskFile:
    """One file of a task's `tests/` as read: its path relative to `tests/`, its bytes and its
    permission bits."""

    relative: str
    content: bytes
    mode: int


@dataclass(frozen=True)
class TaskContents:
    digest: str
    tests: tuple[TaskFile, ...]  # the files under tests/, sorted by path


def task_digest(task_dir: Path) -> str:
    """SHA-256 over the task's files: sorted relative POSIX paths, `path NUL bytes NUL` each,
    the top-level `README.md` excluded (§2.5)."""
    return read_task_contents(task_dir).digest


def read_task_contents(task_dir: Path) -> TaskContents:
    """The digest of `task_digest` and, from the same read, the files under `tests/`."""
    files = sorted(
        (path.relative_to(task_dir).as_posix(), path)
        for path in task_dir.rglob("*")
        if path.is_file()
        and not _DIGEST_IGNORED_DIRS.intersection(path.relative_to(task_dir).parts)
        and path.suffix != ".pyc"
    )
    digest = hashlib.sha256()
    tests: list[TaskFile] = []
    for relative, path in files:
        if relative == "README.md":
            continue
        content = path.read_bytes()
        digest.update(relative.encode("utf-8") + b"\0" + content + b"\0")
        if relative.startswith(f"{TESTS_DIR_NAME}/"):
            mode = path.stat().st_mode & 0o777
            tests.append(TaskFile(relative.removeprefix(f"{TESTS_DIR_NAME}/"), content, mode))
    return TaskContents(digest.hexdigest(), tuple(tests))
