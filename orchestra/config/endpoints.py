"""Endpoint configs (orchestrator.md §4): which provider serves each model name, and how."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestra.agents.oracle.faults import OracleConfigError, fault_plan_from_env
from orchestra.config.errors import (
    ConfigError,
    display_path,
    from_validation_error,
    raise_if_any,
    show_value,
)
from orchestra.config.loading import load_json

Provider = Literal["openai", "anthropic", "openrouter", "databricks", "databricks_v2", "oracle"]

#: Providers this project's `buzz-agent` implements; the others validate but preflight rejects them.
SUPPORTED_PROVIDERS = frozenset({"openai", "anthropic", "openrouter", "oracle"})

#: The variable `buzz-agent` reads its key from, per provider (agent-harness.md §2.1).
PROVIDER_KEY_VARIABLE: Mapping[str, str] = {
    "openai": "OPENAI_COMPAT_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}

#: `OPENAI_COMPAT_API_KEY` falls back to this one when only it is set (§2.4).
API_KEY_FALLBACKS: Mapping[str, str] = {"OPENAI_COMPAT_API_KEY": "OPENAI_API_KEY"}

#: Every variable the orchestrator sets for agents (§4.3, §7.9); configs may not override them.
TRIAL_IDENTITY_VARIABLES = frozenset(
    {
        "BUZZ_RELAY_URL",
        "BUZZ_PRIVATE_KEY",
        "BUZZ_ACP_CHANNELS",
        "BUZZ_ACP_MCP_COMMAND",
        "BUZZ_ACP_AGENT_COMMAND",
        "BUZZ_ACP_AGENT_ARGS",
        "BUZZ_ACP_SUBSCRIBE",
        "BUZZ_ACP_RESPOND_TO",
        "BUZZ_ACP_NO_MEMORY",
        "BUZZ_ACP_SYSTEM_PROMPT_FILE",
        "BUZZ_ACP_NO_BASE_PROMPT",
        "BUZZ_ACP_AGENTS",
        "BUZZ_ACP_MAX_TURN_DURATION",
        "BUZZ_ACP_IDLE_TIMEOUT",
        "BUZZ_ACP_EVENT_LOG",
        "BUZZ_AGENT_TRAJECTORY_LOG",
        "BUZZ_AGENT_PROVIDER",
        "BUZZ_AGENT_MODEL",
        "BUZZ_AGENT_THINKING_EFFORT",
        "BUZZ_AGENT_MAX_OUTPUT_TOKENS",
        "BUZZ_AGENT_MAX_CONTEXT_TOKENS",
        "BUZZ_AGENT_HANDOFF_PERCENT",
        "BUZZ_AGENT_HANDOFF_AT_TOKENS",
        "BUZZ_AGENT_MAX_ROUNDS",
        "BUZZ_AGENT_NO_HINTS",
        "HOME",
        "TMPDIR",
        "PATH",
    }
)

#: What the oracle itself sets for its agents (§4.2).
ORACLE_AGENT_VARIABLES = frozenset(
    {"OPENAI_COMPAT_BASE_URL", "OPENAI_COMPAT_API", "OPENAI_COMPAT_API_KEY"}
)
ORACLE_SETTING_PREFIX = "ORACLE_"

ENV_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

FORBIDDEN_OVERRIDE_PROBLEM = "endpoint env cannot override trial identity"


def forbidden_override_problem(names: set[str] | frozenset[str]) -> str:
    return f"{FORBIDDEN_OVERRIDE_PROBLEM}: {sorted(names)}"


class Endpoint(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    provider: Provider
    api_key_env: Annotated[str, Field(pattern=ENV_NAME_RE.pattern)] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    base_url: str | None = None
    # The model id sent to the provider (`BUZZ_AGENT_MODEL`); unset: the endpoint's name.
    model: Annotated[str, Field(min_length=1)] | None = None

    @property
    def is_oracle(self) -> bool:
        return self.provider == "oracle"

    def model_id(self, endpoint_name: str) -> str:
        """The model id agents send for this endpoint."""
        return self.model or endpoint_name

    @property
    def is_loopback(self) -> bool:
        """`base_url` names this machine (a self-hosted server that may need no key)."""
        host = urlsplit(self.base_url).hostname if self.base_url else None
        return host in _LOOPBACK_HOSTS

    @property
    def provider_key_variable(self) -> str | None:
        return PROVIDER_KEY_VARIABLE.get(self.provider)

    def forbidden_env_keys(self) -> frozenset[str]:
        """Keys neither this endpoint's `env` nor a roster's `generation.extra` may set."""
        extra = {name for name in (self.api_key_env, self.provider_key_variable) if name}
        if self.is_oracle:
            extra |= ORACLE_AGENT_VARIABLES
        return TRIAL_IDENTITY_VARIABLES | extra

    def agent_env_items(self) -> dict[str, str]:
        """`env` as agents receive it: an oracle's `ORACLE_*` switches configure the oracle only."""
        if not self.is_oracle:
            return dict(self.env)
        return {k: v for k, v in self.env.items() if not k.startswith(ORACLE_SETTING_PREFIX)}

    def oracle_settings(self) -> dict[str, str]:
        return {k: v for k, v in self.env.items() if k.startswith(ORACLE_SETTING_PREFIX)}

    def base_url_seen_from(self, host_alias: str | None) -> str | None:
        """`base_url` as agents must dial it: a loopback host rewritten to `host_alias`, the
        name agents use for the host (docker env: `host.docker.internal`); None keeps it."""
        if self.base_url is None or host_alias is None:
            return self.base_url
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if host not in _LOOPBACK_HOSTS:
            return self.base_url
        netloc = host_alias + (f":{parts.port}" if parts.port else "")
        if parts.username or parts.password:
            netloc = parts.netloc.rsplit("@", 1)[0] + "@" + netloc
        return parts._replace(netloc=netloc).geturl()

    def fingerprint(self) -> dict[str, Any]:
        """The measurement-relevant fields, for the replay identity (§2.5). `model` only when
        set, so identities recorded before the field existed still match."""
        fields: dict[str, Any] = {
            "provider": self.provider,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "env": [[key, self.env[key]] for key in sorted(self.env)],
        }
        if self.model is not None:
            fields["model"] = self.model
        return fields

    def summary(self) -> dict[str, Any]:
        """What a job's `config.json` records (§10.2): names only, no values; `model` only
        when set."""
        summary: dict[str, Any] = {
            "provider": self.provider,
            "api_key_env": self.api_key_env,
            "base_url": self.base_url,
            "env_keys": sorted(self.env),
        }
        if self.model is not None:
            summary["model"] = self.model
        return summary


#: The built-in `null` endpoint (`endpoints/null.json`): the oracle answering every model request
#: with an empty end of turn, so its agents never act (the do-nothing floor, D114).
NULL_ENDPOINT_NAME = "null"
NULL_ENDPOINT = Endpoint(provider="oracle", env={"ORACLE_FAULTS": "silent:*"})


@dataclass(frozen=True)
class EndpointConfig:
    path: Path
    endpoints: Mapping[str, Endpoint]

    @property
    def shown_path(self) -> str:
        return display_path(self.path)

    def __contains__(self, name: object) -> bool:
        return name in self.endpoints

    def __getitem__(self, name: str) -> Endpoint:
        return self.endpoints[name]

    def oracle_endpoint_names(self) -> list[str]:
        return [name for name, endpoint in self.endpoints.items() if endpoint.is_oracle]


def load_endpoint_config(path: Path) -> EndpointConfig:
    """Parse and validate an endpoint config; all problems are raised together."""
    shown = display_path(path)
    data = load_json(path)
    if not isinstance(data, dict):
        raise ConfigError(shown, "", f"expected a JSON object of endpoints, got {show_value(data)}")
    if not data:
        raise ConfigError(shown, "", "defines no endpoints")
    errors: list[ConfigError] = []
    endpoints: dict[str, Endpoint] = {}
    for name, raw in data.items():
        if not name or name != name.strip() or any(ch.isspace() for ch in name):
            errors.append(
                ConfigError(shown, show_value(name), "endpoint names must be non-empty, no spaces")
            )
            continue
        try:
            endpoint = Endpoint.model_validate(raw)
        except ValidationError as exc:
            errors.extend(from_validation_error(shown, exc, prefix=(name,), model=Endpoint))
            continue
        found = _endpoint_problems(shown, name, endpoint)
        errors.extend(found)
        if not found:
            endpoints[name] = endpoint
    raise_if_any(errors)
    return EndpointConfig(path=path, endpoints=endpoints)


def _endpoint_problems(shown: str, name: str, endpoint: Endpoint) -> list[ConfigError]:
    errors: list[ConfigError] = []

    def problem(field: str, text: str) -> None:
        errors.append(ConfigError(shown, f"{name}.{field}" if field else name, text))

    if endpoint.is_oracle and endpoint.api_key_env is not None:
        problem("api_key_env", 'not allowed for provider "oracle" (the oracle needs no key)')
    if not endpoint.is_oracle and endpoint.api_key_env is None and not endpoint.is_loopback:
        hint = " (optional only for a base_url on this machine: 127.0.0.1, localhost, ::1)"
        problem(
            "api_key_env",
            f'required for provider "{endpoint.provider}"' + (hint if endpoint.base_url else ""),
        )
    if endpoint.is_oracle and endpoint.model is not None:
        problem("model", 'not allowed for provider "oracle" (the oracle serves the endpoint name)')
    if endpoint.base_url is not None:
        if endpoint.provider != "openai":
            problem("base_url", 'only allowed with provider "openai"')
        elif not _is_http_url(endpoint.base_url):
            problem(
                "base_url",
                f"must be an http:// or https:// URL (got {show_value(endpoint.base_url)})",
            )
        if "OPENAI_COMPAT_BASE_URL" in endpoint.env:
            problem("env.OPENAI_COMPAT_BASE_URL", "conflicts with base_url; set only one of them")
    for key in endpoint.env:
        if not _ENV_KEY_RE.match(key):
            problem(f"env.{key}", "not a valid environment variable name")
    forbidden = set(endpoint.env) & endpoint.forbidden_env_keys()
    if forbidden:
        problem("env", forbidden_override_problem(forbidden))
    if endpoint.is_oracle:
        try:
            fault_plan_from_env(endpoint.oracle_settings())
        except OracleConfigError as exc:
            problem(f"env.{exc.variable}", exc.problem)
    return errors


def _is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def missing_endpoint_error(name: str, config: EndpointConfig) -> ConfigError:
    """`endpoint "x" is not in <file>`, suggesting a sibling `*.json` that defines it (§4.1)."""
    message = f'endpoint "{name}" is not in {config.shown_path}'
    suggestion = _sibling_defining(name, config.path)
    if suggestion is not None:
        message += f" (try --endpoint-config {display_path(suggestion)})"
    return ConfigError(config.shown_path, name, "endpoint is missing", message=message)


def _sibling_defining(name: str, path: Path) -> Path | None:
    """A valid endpoint config beside `path` that defines `name` (never one that would fail)."""
    try:
        siblings = sorted(path.parent.glob("*.json"))
    except OSError:
        return None
    for candidate in siblings:
        if candidate.name == path.name:
            continue
        try:
            if name in load_endpoint_config(candidate).endpoints:
                return candidate
        except (ConfigError, OSError):
            continue  # a broken neighbour is not this command's problem, nor a way out
    return None


def resolve_api_key(variable: str, environ: Mapping[str, str]) -> str | None:
    """The non-empty value of `variable`, or of its fallback (§2.4); None when neither is set."""
    value = environ.get(variable)
    if value:
        return value
    fallback = API_KEY_FALLBACKS.get(variable)
    return (environ.get(fallback) or None) if fallback else None
