"""Condition manifests (orchestrator.md §3): the roster, prices, budgets, and the condition hash."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    field_validator,
)

from orchestra.config.canonical import canonical_sha256
from orchestra.config.endpoints import TRIAL_IDENTITY_VARIABLES, forbidden_override_problem
from orchestra.config.errors import (
    ConfigError,
    display_path,
    find_duplicates,
    from_validation_error,
    matching,
    raise_if_any,
    show_value,
)
from orchestra.config.loading import load_yaml_or_json
from orchestra.errors import TrialFailure

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
NonEmptyStr = Annotated[str, Field(min_length=1)]

AgentKind = Literal["orchestrator", "worker"]
ThinkingEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
CONDITION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
ROSTER_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
EXTRA_KEY_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def _extra_value(value: Any) -> str | int | float | bool:
    # one check instead of a union, whose errors would name every member type separately
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"must be a finite number (got {show_value(value)})")
    if not isinstance(value, str | int | float | bool):
        raise ValueError(f"must be a string, integer, number or boolean (got {show_value(value)})")
    return value


ExtraValue = Annotated[str | int | float | bool, PlainValidator(_extra_value)]


class ArtifactRef(BaseModel):
    """A prompt, persona or skill file, pinned by its SHA-256."""

    model_config = _STRICT

    path: str
    sha256: Annotated[
        str, AfterValidator(matching(SHA256_RE, "must be 64 lowercase hex characters"))
    ]

    @field_validator("path")
    @classmethod
    def _relative_posix(cls, value: str) -> str:
        if not value:
            raise ValueError("must not be empty")
        if "\\" in value:
            raise ValueError(f"must use POSIX separators (got {show_value(value)})")
        pure = PurePosixPath(value)
        if pure.is_absolute():
            raise ValueError(f"must be relative to the artifact root (got {show_value(value)})")
        if ".." in pure.parts:
            raise ValueError(f'must not contain a ".." component (got {show_value(value)})')
        return value


class Generation(BaseModel):
    model_config = _STRICT

    max_output_tokens: PositiveInt | None = None
    context_window_tokens: PositiveInt | None = None
    compact_at_percent: Annotated[int, Field(ge=1, le=100)] | None = None
    compact_at_tokens: PositiveInt | None = None
    thinking_effort: ThinkingEffort | None = None
    extra: dict[str, ExtraValue] = Field(default_factory=dict)


class Budget(BaseModel):
    model_config = _STRICT

    max_calls: PositiveInt | None = None
    max_input_tokens: PositiveInt | None = None
    max_output_tokens: PositiveInt | None = None
    max_cost_usd: PositiveFloat | None = None


class RosterEntry(BaseModel):
    model_config = _STRICT

    id: Annotated[str, Field(pattern=ROSTER_ID_RE.pattern, max_length=48)]
    kind: AgentKind
    role: NonEmptyStr
    count: PositiveInt
    endpoint: NonEmptyStr
    model_revision: NonEmptyStr
    prompt: ArtifactRef
    persona: ArtifactRef | None = None
    skills: list[ArtifactRef] = Field(default_factory=list)
    include_platform_prompt: bool = True
    generation: Generation = Field(default_factory=Generation)
    budget: Budget = Field(default_factory=Budget)
    concurrency: PositiveInt = 1
    harness: Literal["buzz-agent", "goose", "codex"] = "buzz-agent"

    def artifacts(self) -> list[tuple[str, ArtifactRef]]:
        """(field name, ref) in composition order: prompt, persona, skills (§7.8)."""
        refs = [("prompt", self.prompt)]
        if self.persona is not None:
            refs.append(("persona", self.persona))
        refs.extend((f"skills[{i}]", skill) for i, skill in enumerate(self.skills))
        return refs


class Price(BaseModel):
    model_config = _STRICT

    input_per_million_usd: NonNegativeFloat
    cached_input_per_million_usd: NonNegativeFloat
    output_per_million_usd: NonNegativeFloat
    cache_read_rate: Annotated[float, Field(ge=0, le=1)] = 0.0
    # Unset: CACHE_WRITE_PRICE_FACTOR × input (Anthropic's 5-minute cache write price); only
    # the anthropic route reports cache writes. Removed from the condition hash when unset.
    cache_write_per_million_usd: NonNegativeFloat | None = None


class TrialBudget(BaseModel):
    model_config = _STRICT

    timeout_seconds: PositiveInt
    max_cost_usd: PositiveFloat | None = None


class EnvironmentOverrides(BaseModel):
    model_config = _STRICT

    override_cpus: PositiveInt | None = None
    override_memory_mb: PositiveInt | None = None
    override_storage_mb: PositiveInt | None = None


@dataclass(frozen=True)
class AgentSlot:
    """One agent identity of a trial (§3.4): `<entry id>-<n>`."""

    agent_id: str
    entry: RosterEntry

    @property
    def class_id(self) -> str:
        return self.entry.id

    @property
    def kind(self) -> AgentKind:
        return self.entry.kind

    @property
    def role(self) -> str:
        return self.entry.role


class Manifest(BaseModel):
    model_config = _STRICT

    schema_version: str = "1"
    condition: Annotated[str, Field(pattern=CONDITION_RE.pattern)]
    roster: Annotated[list[RosterEntry], Field(min_length=1)]
    prices: dict[str, Price]
    trial_budget: TrialBudget
    environment: EnvironmentOverrides = Field(default_factory=EnvironmentOverrides)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("schema_version", mode="before")
    @classmethod
    def _version_one(cls, value: Any) -> Any:
        # an unquoted `1` is accepted and normalised (§3.2); `true` is not a version
        if isinstance(value, int) and not isinstance(value, bool) and value == 1:
            return "1"
        if value != "1":
            raise ValueError(f'must be "1" (got {show_value(value)})')
        return value

    @property
    def orchestrator(self) -> RosterEntry:
        return next(entry for entry in self.roster if entry.kind == "orchestrator")

    @property
    def is_solo(self) -> bool:
        return sum(entry.count for entry in self.roster) == 1

    def endpoints_used(self) -> list[str]:
        """Endpoint names in roster order, each once."""
        return list(dict.fromkeys(entry.endpoint for entry in self.roster))

    def agent_slots(self) -> list[AgentSlot]:
        """Agents in launch order: the orchestrator entry first, then the roster order (§3.4)."""
        ordered = sorted(self.roster, key=lambda entry: entry.kind != "orchestrator")
        return [
            AgentSlot(agent_id=f"{entry.id}-{n}", entry=entry)
            for entry in ordered
            for n in range(1, entry.count + 1)
        ]

    def normalized(self) -> dict[str, Any]:
        """Every field with its default; an unset `thinking_effort` or
        `cache_write_per_million_usd` is removed (§3.5), so older manifests keep their hash."""
        data = self.model_dump(mode="json")
        for price in data["prices"].values():
            if price["cache_write_per_million_usd"] is None:
                del price["cache_write_per_million_usd"]
        for entry in data["roster"]:
            if entry["generation"]["thinking_effort"] is None:
                del entry["generation"]["thinking_effort"]
        return data

    def condition_hash(self) -> str:
        """`manifest_sha256`: SHA-256 of the canonical JSON of the normalised manifest."""
        return canonical_sha256(self.normalized())


def load_manifest(path: Path) -> Manifest:
    """Parse and validate a manifest; every problem is reported, each naming its field."""
    shown = display_path(path)
    data = load_yaml_or_json(path)
    if not isinstance(data, dict):
        raise ConfigError(shown, "", f"expected a mapping at the top level, got {show_value(data)}")
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise_if_any(from_validation_error(shown, exc, model=Manifest))
        raise  # unreachable: a ValidationError always carries at least one error
    raise_if_any([ConfigError(shown, field, text) for field, text in _cross_checks(manifest)])
    return manifest


def _cross_checks(manifest: Manifest) -> list[tuple[str, str]]:
    """Rules that relate fields to each other, as (field path, problem)."""
    problems: list[tuple[str, str]] = []
    for key, where, first in find_duplicates(
        (entry.id, f"roster[{i}].id") for i, entry in enumerate(manifest.roster)
    ):
        problems.append((where, f'duplicate id "{key}" (also {first})'))
    for index, entry in enumerate(manifest.roster):
        where = f"roster[{index}]"
        if entry.concurrency > entry.count:
            problems.append(
                (
                    f"{where}.concurrency",
                    f"must be at most count ({entry.count}), got {entry.concurrency}",
                )
            )
        problems.extend(_generation_problems(f"{where}.generation", entry.generation))
        if entry.endpoint not in manifest.prices:
            problems.append(
                ("prices", f'no price for endpoint "{entry.endpoint}" ({where}.endpoint)')
            )
    orchestrators = sum(entry.count for entry in manifest.roster if entry.kind == "orchestrator")
    if orchestrators != 1:
        problems.append(
            (
                "roster",
                "exactly one orchestrator is required (one entry with kind: orchestrator and "
                f"count: 1), got {orchestrators}",
            )
        )
    problems.extend(_json_value_problems("metadata", manifest.metadata))
    return problems


def _generation_problems(where: str, gen: Generation) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    window, output = gen.context_window_tokens, gen.max_output_tokens
    if window is not None and output is not None and output >= window:
        problems.append(
            (
                f"{where}.max_output_tokens",
                f"must be less than context_window_tokens ({window}), got {output}",
            )
        )
    if window is not None and output is not None and gen.compact_at_tokens is not None:
        limit = window - output
        if gen.compact_at_tokens > limit:
            problems.append(
                (
                    f"{where}.compact_at_tokens",
                    f"must be at most context_window_tokens - max_output_tokens ({limit}), "
                    f"got {gen.compact_at_tokens}",
                )
            )
    for key in gen.extra:
        if not EXTRA_KEY_RE.match(key):
            problems.append((f"{where}.extra.{key}", "keys must match ^[A-Z][A-Z0-9_]*$"))
    forbidden = set(gen.extra) & TRIAL_IDENTITY_VARIABLES
    if forbidden:
        problems.append((f"{where}.extra", forbidden_override_problem(forbidden)))
    return problems


def _json_value_problems(where: str, value: Any) -> list[tuple[str, str]]:
    """YAML can produce dates, non-string keys and NaN; metadata must be plain JSON."""
    if value is None or isinstance(value, bool | int | str):
        return []
    if isinstance(value, float):
        return [] if math.isfinite(value) else [(where, "must be a finite number")]
    if isinstance(value, list):
        return [
            p for i, item in enumerate(value) for p in _json_value_problems(f"{where}[{i}]", item)
        ]
    if isinstance(value, dict):
        problems: list[tuple[str, str]] = []
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append((where, f"keys must be strings (got {show_value(key)})"))
            else:
                problems.extend(_json_value_problems(f"{where}.{key}", item))
        return problems
    return [(where, f"not a JSON value (got {type(value).__name__})")]


# --- artifacts -------------------------------------------------------------------------------


class ArtifactHashMismatch(TrialFailure):
    """An artifact file's bytes no longer match the manifest's sha256 (§3.3, §7.8)."""


def default_artifact_root(manifest_path: Path) -> Path:
    """The parent of the manifest's directory (§2.2 `--artifact-root`)."""
    return manifest_path.absolute().parent.parent


def artifact_file(root: Path, ref: ArtifactRef) -> Path:
    return root / ref.path


def read_artifact(root: Path, ref: ArtifactRef) -> bytes:
    """The artifact's bytes, verified against its sha256 immediately before use."""
    path = artifact_file(root, ref)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ArtifactHashMismatch(
            f"{display_path(path)}: cannot be read ({exc.strerror})"
        ) from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != ref.sha256:
        raise ArtifactHashMismatch(
            f"{display_path(path)}: sha256 is {actual}, the manifest pins {ref.sha256}"
        )
    return data


def _artifact_root_hint(manifest_path: Path, root: Path) -> str:
    """Where artifact paths were looked up and, for the default root, the way out for a
    manifest copied away from the files it pins."""
    if root.absolute() != default_artifact_root(manifest_path):
        return f"(the artifact root is {display_path(root)}, from --artifact-root)"
    return (
        f"(the artifact root is {display_path(root)}, the parent of the manifest's directory; "
        "pass --artifact-root DIR for a manifest copied out of its repository)"
    )


def verify_artifacts(manifest: Manifest, manifest_path: Path, root: Path) -> list[ConfigError]:
    """Re-hash every prompt, persona and skill file (preflight, §3.3)."""
    shown = display_path(manifest_path)
    errors: list[ConfigError] = []
    for index, entry in enumerate(manifest.roster):
        for field, ref in entry.artifacts():
            where = f"roster[{index}].{field}"
            path = artifact_file(root, ref)
            if not path.is_file():
                found = f"file not found: {display_path(path)} {_artifact_root_hint(manifest_path, root)}"
                errors.append(ConfigError(shown, f"{where}.path", found))
                continue
            try:
                read_artifact(root, ref)
            except ArtifactHashMismatch as exc:
                errors.append(ConfigError(shown, f"{where}.sha256", f"does not match {exc}"))
    return errors
