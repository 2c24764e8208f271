"""A condition = a manifest plus the endpoint config that serves it (§2.4 preflight checks 2–4)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestra.config.endpoints import (
    NULL_ENDPOINT,
    SUPPORTED_PROVIDERS,
    Endpoint,
    EndpointConfig,
    forbidden_override_problem,
    load_endpoint_config,
    missing_endpoint_error,
)
from orchestra.config.errors import ConfigError, display_path, raise_if_any
from orchestra.config.manifest import (
    Manifest,
    Price,
    RosterEntry,
    default_artifact_root,
    load_manifest,
    verify_artifacts,
)


@dataclass(frozen=True)
class Condition:
    manifest_path: Path
    manifest: Manifest
    artifact_root: Path
    endpoint_config: EndpointConfig

    @property
    def name(self) -> str:
        return self.manifest.condition

    @property
    def manifest_sha256(self) -> str:
        return self.manifest.condition_hash()

    @property
    def is_oracle(self) -> bool:
        """Every roster endpoint is the built-in oracle: the run scores reference solutions."""
        return all(self.endpoint(entry).is_oracle for entry in self.manifest.roster)

    @property
    def uses_oracle(self) -> bool:
        return any(self.endpoint(entry).is_oracle for entry in self.manifest.roster)

    def endpoint(self, entry: RosterEntry) -> Endpoint:
        return self.endpoint_config[entry.endpoint]

    def used_endpoints(self) -> dict[str, Endpoint]:
        return {name: self.endpoint_config[name] for name in self.manifest.endpoints_used()}

    def do_nothing(self) -> Condition:
        """The same roster with every endpoint it uses replaced by the built-in `null` one and
        every price 0: what a do-nothing agent scores on a task (the floor, D114)."""
        used = self.manifest.endpoints_used()
        free = Price(
            input_per_million_usd=0.0, cached_input_per_million_usd=0.0, output_per_million_usd=0.0
        )
        manifest = self.manifest.model_copy(update={"prices": {name: free for name in used}})
        endpoints = EndpointConfig(
            self.endpoint_config.path, {name: NULL_ENDPOINT for name in used}
        )
        return Condition(self.manifest_path, manifest, self.artifact_root, endpoints)

    def replay_fingerprint(self) -> dict[str, object]:
        """The endpoint part of the replay identity (§2.5), keyed by endpoint name."""
        return {name: ep.fingerprint() for name, ep in self.used_endpoints().items()}


def load_condition(
    manifest_path: Path,
    endpoint_config_path: Path,
    artifact_root: Path | None = None,
    *,
    verify: bool = True,
) -> Condition:
    """Load a manifest and an endpoint config and, with `verify`, cross-check them.

    Raises `ConfigError` (possibly `ConfigErrors`): schema problems always; with `verify`
    also artifact hashes, endpoints the config lacks, unsupported harnesses or providers
    (`condition_problems`, which a caller may run separately to tell validation errors,
    exit 1, from preflight failures, exit 2).
    """
    errors: list[ConfigError] = []
    manifest = endpoints = None
    try:
        manifest = load_manifest(manifest_path)
    except ConfigError as exc:
        errors.extend(exc.errors)
    try:
        endpoints = load_endpoint_config(endpoint_config_path)
    except ConfigError as exc:
        errors.extend(exc.errors)
    if manifest is None or endpoints is None:
        raise_if_any(errors)
    assert manifest is not None and endpoints is not None
    root = artifact_root if artifact_root is not None else default_artifact_root(manifest_path)
    condition = Condition(manifest_path, manifest, root.absolute(), endpoints)
    if verify:
        raise_if_any(condition_problems(condition))
    return condition


def condition_problems(condition: Condition) -> list[ConfigError]:
    """Artifact hashes, endpoint coverage and what this version cannot run."""
    manifest, config = condition.manifest, condition.endpoint_config
    shown = display_path(condition.manifest_path)
    errors = verify_artifacts(manifest, condition.manifest_path, condition.artifact_root)
    for name in manifest.endpoints_used():
        if name not in config:
            errors.append(missing_endpoint_error(name, config))
    for index, entry in enumerate(manifest.roster):
        where = f"roster[{index}]"
        if entry.harness != "buzz-agent":
            errors.append(
                ConfigError(
                    shown, f"{where}.harness", f'harness "{entry.harness}" is not supported'
                )
            )
        if entry.endpoint not in config:
            continue
        endpoint = config[entry.endpoint]
        if endpoint.provider not in SUPPORTED_PROVIDERS:
            errors.append(
                ConfigError(
                    config.shown_path,
                    f"{entry.endpoint}.provider",
                    f'provider "{endpoint.provider}" is not supported by buzz-agent',
                )
            )
        clashing = set(entry.generation.extra) & endpoint.forbidden_env_keys()
        if clashing:
            errors.append(
                ConfigError(
                    shown, f"{where}.generation.extra", forbidden_override_problem(clashing)
                )
            )
    return errors
