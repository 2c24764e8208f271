"""Task fixtures, `buzz-fixture.toml` (orchestrator.md §6): relay state a task needs up front."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestra.config.errors import (
    ConfigError,
    display_path,
    find_duplicates,
    from_validation_error,
    matching,
    raise_if_any,
    show_value,
)
from orchestra.config.loading import load_toml

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)

NonEmptyStr = Annotated[str, Field(min_length=1)]
MEMORY_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,127}$")
FILE_MODE_RE = re.compile(r"^0?[0-7]{3}$")
USER_ACTOR = "user"
RANDOM_HEX_PLACEHOLDER = "{{random_hex}}"
FIXTURE_FILE_NAME = "buzz-fixture.toml"
MAX_SCRIPTED_DELAY_SECONDS = 600.0


class DirectoryEntry(BaseModel):
    """A seeded identity; `identity_id` defaults to `name` (see `Fixture.directory_entries`)."""

    model_config = _STRICT

    identity_id: NonEmptyStr | None = None
    name: NonEmptyStr
    role: Literal["user", "bot"]
    about: str | None = None
    channel_member: bool = False

    @property
    def key(self) -> str:
        """The identity id used for key derivation (§5.7)."""
        return self.identity_id if self.identity_id is not None else self.name


class DirectorySeries(BaseModel):
    model_config = _STRICT

    prefix: NonEmptyStr
    start: Annotated[int, Field(ge=0)]
    end: Annotated[int, Field(ge=0)]
    width: Annotated[int, Field(ge=1)]
    role: Literal["user", "bot"]
    channel_member: bool = False
    about: str | None = None

    def expand(self) -> list[DirectoryEntry]:
        return [
            DirectoryEntry(
                identity_id=f"{self.prefix}{index:0{self.width}d}",
                name=f"{self.prefix}{index:0{self.width}d}",
                role=self.role,
                about=self.about,
                channel_member=self.channel_member,
            )
            for index in range(self.start, self.end + 1)
        ]


class ScriptedMessage(BaseModel):
    model_config = _STRICT

    label: NonEmptyStr
    actor: NonEmptyStr
    content: str
    reply_to_task: bool = False
    mention_orchestrator: bool = True
    #: seconds after the task's acceptance before it is posted (never before the message
    #: before it); the trial does not end while it is pending (§7.11)
    delay_seconds: Annotated[float, Field(ge=0, le=MAX_SCRIPTED_DELAY_SECONDS)] = 0.0

    def render(self, orchestrator_id: str, user_name: str) -> str:
        """`{orchestrator}` and `{user}` substituted, nothing else (§6)."""
        return self.content.replace("{orchestrator}", orchestrator_id).replace("{user}", user_name)


class MemorySeed(BaseModel):
    model_config = _STRICT

    slug: Annotated[str, Field(pattern=MEMORY_SLUG_RE.pattern)]
    value: NonEmptyStr


class FixtureFile(BaseModel):
    model_config = _STRICT

    path: str
    content: str
    mode: Annotated[
        str, AfterValidator(matching(FILE_MODE_RE, 'must be an octal string such as "0644"'))
    ] = "0644"

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        pure = PurePosixPath(value)
        if not pure.is_absolute() or ".." in pure.parts or value.endswith("/"):
            raise ValueError(f"must be an absolute file path without .. (got {show_value(value)})")
        return value

    @property
    def mode_bits(self) -> int:
        return int(self.mode, 8)

    def render(self, random_hex: str) -> str:
        """Content with every `{{random_hex}}` replaced by the trial's one value."""
        return self.content.replace(RANDOM_HEX_PLACEHOLDER, random_hex)


class Fixture(BaseModel):
    model_config = _STRICT

    schema_version: Literal[1]
    requires_evidence: bool = True
    user_display_name: NonEmptyStr | None = None
    home: str | None = None
    observe_channel_names: list[NonEmptyStr] = Field(default_factory=list)
    directory: list[DirectoryEntry] = Field(default_factory=list)
    directory_series: list[DirectorySeries] = Field(default_factory=list)
    scripted_messages: list[ScriptedMessage] = Field(default_factory=list)
    memory_seeds: list[MemorySeed] = Field(default_factory=list)
    files: list[FixtureFile] = Field(default_factory=list)

    @classmethod
    def empty(cls) -> Fixture:
        """The fixture of a task without `buzz-fixture.toml` (§6)."""
        return cls(schema_version=1, requires_evidence=False)

    def directory_entries(self) -> list[DirectoryEntry]:
        """`[[directory]]` entries, then every series expanded, in file order (§6)."""
        return [*self.directory, *(e for series in self.directory_series for e in series.expand())]


def load_fixture(task_dir: Path) -> Fixture:
    """The task's fixture, or the empty fixture when it has no `buzz-fixture.toml`."""
    path = task_dir / FIXTURE_FILE_NAME
    if not path.exists():
        return Fixture.empty()
    shown = display_path(path)
    data = load_toml(path)
    try:
        fixture = Fixture.model_validate(data)
    except ValidationError as exc:
        raise_if_any(from_validation_error(shown, exc, model=Fixture))
        raise
    raise_if_any([ConfigError(shown, field, text) for field, text in _cross_checks(fixture)])
    return fixture


def _cross_checks(fixture: Fixture) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for index, series in enumerate(fixture.directory_series):
        where = f"directory_series[{index}]"
        if series.end < series.start:
            problems.append(
                (f"{where}.end", f"must be >= start ({series.start}), got {series.end}")
            )
        if len(str(series.end)) > series.width:
            problems.append(
                (f"{where}.width", f"{series.width} digits cannot hold end ({series.end})")
            )
    if problems:
        return problems  # the expanded directory below would be meaningless

    identities = [
        *((e.key, f"directory[{i}].identity_id") for i, e in enumerate(fixture.directory)),
        *(
            (e.key, f"directory_series[{i}]")
            for i, series in enumerate(fixture.directory_series)
            for e in series.expand()
        ),
    ]
    for key, where, first in find_duplicates(identities):
        problems.append((where, f'duplicate identity id "{key}" (also {first})'))
    labelled = (
        (m.label, f"scripted_messages[{i}].label") for i, m in enumerate(fixture.scripted_messages)
    )
    for key, where, first in find_duplicates(labelled):
        problems.append((where, f'duplicate label "{key}" (also {first})'))
    slugs = ((seed.slug, f"memory_seeds[{i}].slug") for i, seed in enumerate(fixture.memory_seeds))
    for key, where, first in find_duplicates(slugs):
        problems.append((where, f'duplicate slug "{key}" (also {first})'))

    identity_ids = {key for key, _ in identities}
    for index, message in enumerate(fixture.scripted_messages):
        if message.actor != USER_ACTOR and message.actor not in identity_ids:
            problems.append(
                (
                    f"scripted_messages[{index}].actor",
                    f'"{message.actor}" is neither "user" nor a directory identity_id',
                )
            )
    problems.extend(_home_problems(fixture))
    return problems


def _home_problems(fixture: Fixture) -> list[tuple[str, str]]:
    home = fixture.home
    if home is None:
        return [("home", "is required when files are declared")] if fixture.files else []
    home_path = PurePosixPath(home)
    if not home_path.is_absolute() or ".." in home_path.parts or home_path == PurePosixPath("/"):
        return [("home", f"must be an absolute directory path below / (got {show_value(home)})")]
    problems: list[tuple[str, str]] = []
    for index, file in enumerate(fixture.files):
        path = PurePosixPath(file.path)
        if path == home_path or not path.is_relative_to(home_path):
            problems.append(
                (
                    f"files[{index}].path",
                    f"must be under home ({home}), got {show_value(file.path)}",
                )
            )
    located = ((file.path, f"files[{i}].path") for i, file in enumerate(fixture.files))
    problems.extend(
        (where, f"duplicate path (also {first})") for _, where, first in find_duplicates(located)
    )
    return problems
