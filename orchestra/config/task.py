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
from orchestra.config.harbor_task import (
    HARBOR_LAYER,
    HarborSettings,
    HarborTaskToml,
    harbor_checksum,
    harbor_layer,
    harbor_settings,
    load_harbor_toml,
    missing_harbor_files,
    strip_canary,
)
from orchestra.config.loading import load_toml
from orchestra.paths import SOLUTION_DIR_NAME, TESTS_DIR_NAME, TaskPaths

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

Layer = Literal["regression", "workflow", "harbor"]
#: Buzz tasks are `regression` or `workflow`; a Harbor task (no `buzz-fixture.toml`) may also
#: be, and is `harbor` when its `[metadata]` names no layer (docs/decisions.md D46).
BUZZ_LAYERS: tuple[Layer, ...] = ("regression", "workflow")
LAYERS: tuple[Layer, ...] = (*BUZZ_LAYERS, HARBOR_LAYER)
#: Attempts per task when `-k` is not given (§2.3 item 5; `harbor`: upstream's k for datasets
#: that are not Buzz's).
LAYER_DEFAULT_ATTEMPTS: dict[str, int] = {"regression": 1, "workflow": 3, "harbor": 5}

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
    #: set for a Harbor task: graded on the state its agents leave in their environment
    harbor: HarborSettings | None = None

    @property
    def is_harbor(self) -> bool:
        return self.harbor is not None

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
    def contract_digest(self) -> str:
        """The digest without `solution/`, as of the first use (`TaskContents`)."""
        return self._contents.contract_digest

    @property
    def verifier_digest(self) -> str:
        """The digest of `tests/` alone, as of the first use: what grades the task (a regrade
        records it, compare says when two sides were graded by different verifiers)."""
        return self._contents.verifier_digest

    @property
    def tests(self) -> tuple[TaskFile, ...]:
        """The files of `tests/` as read with the digest (before any trial of the job starts):
        the pristine copy every verifier of the job runs, whatever happens to the directory
        later (orchestrator.md §9)."""
        return self._contents.tests

    @functools.cached_property
    def harbor_checksum(self) -> str:
        """Harbor's `Task.checksum` of the directory as of the first use (with the digest)."""
        return harbor_checksum(self.dir)

    def tests_changed_on_disk(self) -> list[str]:
        """Paths under `tests/` whose files on disk differ from `tests` (added, removed or
        rewritten since the copy was taken)."""
        now = {file.relative: file for file in read_task_contents(self.dir).tests}
        then = {file.relative: file for file in self.tests}
        return sorted(path for path in now.keys() | then.keys() if now.get(path) != then.get(path))

    def record(self) -> dict[str, str]:
        """`{name, short_name, dir, layer, digest, contract_digest, verifier_digest,
        harbor_checksum}` as job and trial configs record it (§10.2)."""
        return {
            "name": self.name,
            "short_name": self.short_name,
            "dir": self.dir.absolute().as_posix(),
            "layer": self.layer,
            "digest": self.digest,
            "contract_digest": self.contract_digest,
            "verifier_digest": self.verifier_digest,
            "harbor_checksum": self.harbor_checksum,
        }

    def instruction(self) -> str:
        """`instruction.md` as posted: UTF-8 with trailing whitespace removed (§7.2 step 11);
        a Harbor task's without its leading canary lines, as Harbor shows it to agents."""
        text = self.paths.instruction_md.read_text(encoding="utf-8")
        return (strip_canary(text) if self.is_harbor else text).rstrip()


def lacking_task_toml(path: Path) -> list[Path]:
    """Directories that look like tasks but have no `task.toml` (discovery ignores them,
    §2.3 item 1): `path` itself, else the non-hidden directories directly under it."""
    if not path.is_dir() or TaskPaths(path).task_toml.is_file():
        return []
    if _has_task_parts(path):
        return [path]
    children = (child for child in path.iterdir() if not child.name.startswith("."))
    return sorted(
        (child for child in children if child.is_dir() and _has_task_parts(child)
         and not TaskPaths(child).task_toml.is_file()),
        key=lambda child: child.name,
    )  # fmt: skip


def _has_task_parts(directory: Path) -> bool:
    paths = TaskPaths(directory)
    parts = (paths.instruction_md, paths.fixture_toml, paths.environment_dir, paths.tests_dir)
    return any(part.exists() for part in parts)


def load_task(task_dir: Path) -> Task:
    """Validate one task directory; every problem is reported together (§2.3 item 2). Without
    a `buzz-fixture.toml` it is a Harbor task (`load_harbor_task`)."""
    paths = TaskPaths(task_dir)
    if not paths.fixture_toml.exists():
        return load_harbor_task(task_dir)
    shown = display_path(paths.task_toml)
    errors: list[ConfigError] = []
    toml: TaskToml | None = None
    try:
        toml = TaskToml.model_validate(load_toml(paths.task_toml))
    except ConfigError as exc:
        errors.extend(exc.errors)
    except ValidationError as exc:
        errors.extend(from_validation_error(shown, exc, toml_style=True, model=TaskToml))
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


def load_harbor_task(task_dir: Path) -> Task:
    """A Harbor task as a `Task`: Harbor's `task.toml` read into our `TaskToml` (its name the
    directory's unless `[task].name` says otherwise), the empty fixture."""
    paths = TaskPaths(task_dir)
    harbor, errors = load_harbor_toml(paths)
    if harbor is not None and harbor_layer(harbor) not in LAYERS:
        choices = ", ".join(f'"{layer}"' for layer in LAYERS)
        found = show_value(harbor_layer(harbor))
        problem = f"must be one of {choices} (got {found})"
        shown = display_path(paths.task_toml)
        errors.append(_inline(shown, "[metadata].evaluation_layer", problem))
    errors += missing_harbor_files(paths)
    raise_if_any(errors)
    assert harbor is not None
    return Task(
        dir=task_dir, toml=_as_task_toml(harbor, task_dir), fixture=Fixture.empty(),
        harbor=harbor_settings(harbor),
    )  # fmt: skip


def _as_task_toml(harbor: HarborTaskToml, task_dir: Path) -> TaskToml:
    info, environment = harbor.task, harbor.environment
    defaults = EnvironmentSection()
    return TaskToml(
        schema_version=harbor.schema_version or harbor.version or "1.0",
        task=TaskSection(
            name=info.name or task_dir.name,
            description=info.description,
            authors=[Author(name=a.name, email=a.email) for a in info.authors],
            keywords=info.keywords,
        ),
        metadata=MetadataSection(evaluation_layer=harbor_layer(harbor)),
        agent=TimeoutSection(timeout_sec=harbor.agent.timeout_sec or TimeoutSection().timeout_sec),
        verifier=TimeoutSection(timeout_sec=harbor.verifier.timeout_sec),
        environment=EnvironmentSection(
            network_mode=environment.effective_network_mode,
            cpus=environment.cpus or defaults.cpus,
            memory_mb=environment.memory_mb or defaults.memory_mb,
            storage_mb=environment.storage_mb or defaults.storage_mb,
        ),
    )


def _required_field_errors(shown: str, toml: TaskToml) -> list[ConfigError]:
    errors: list[ConfigError] = []
    name = toml.task.name
    if not isinstance(name, str) or not name.strip():
        found = "missing" if name is None else f"got {show_value(name)}"
        errors.append(_inline(shown, "[task].name", f"must be a non-empty string ({found})"))
    layer = toml.metadata.evaluation_layer
    if layer not in BUZZ_LAYERS:
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
    #: the digest without `solution/` (the oracle's answer, not the task a model is measured
    #: on): what the results history pools runs by (docs/results-db.md "History")
    contract_digest: str = ""
    verifier_digest: str = ""  # over `tests/` alone: what grades the task


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
    contract = hashlib.sha256()
    verifier = hashlib.sha256()
    tests: list[TaskFile] = []
    for relative, path in files:
        if relative == "README.md":
            continue
        content = path.read_bytes()
        digest.update(relative.encode("utf-8") + b"\0" + content + b"\0")
        if not relative.startswith(f"{SOLUTION_DIR_NAME}/"):
            contract.update(relative.encode("utf-8") + b"\0" + content + b"\0")
        if relative.startswith(f"{TESTS_DIR_NAME}/"):
            mode = path.stat().st_mode & 0o777
            tests.append(TaskFile(relative.removeprefix(f"{TESTS_DIR_NAME}/"), content, mode))
            verifier.update(relative.encode("utf-8") + b"\0" + content + b"\0")
    return TaskContents(
        digest.hexdigest(), tuple(tests), contract.hexdigest(), verifier.hexdigest()
    )
