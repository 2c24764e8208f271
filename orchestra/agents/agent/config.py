"""buzz-agent configuration from the environment (agent-harness.md §2.1)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from orchestra.agents.llm.client import ProviderSettings
from orchestra.agents.llm.effort import validate_effort
from orchestra.agents.llm.types import Route

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant that works by calling tools."
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_PROVIDER_ALIASES = {
    "openai": "openai",
    "openai-compat": "openai",
    "anthropic": "anthropic",
    "openrouter": "openrouter",
}
_MAX_PROMPT_FILE_BYTES = 1024 * 1024


class ConfigError(ValueError):
    """Invalid configuration; the message names the variable and never contains a secret."""


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    provider: Literal["openai", "anthropic", "openrouter"]
    model: str
    api_key: SecretStr
    base_url: str
    route: Route
    anthropic_version: str
    effort: str | None
    anthropic_thinking: Literal["budget", "adaptive"]
    max_output_tokens: int
    max_context_tokens: int
    handoff_percent: int
    handoff_at_tokens: int | None
    max_rounds: int
    max_token_recoveries: int
    llm_timeout_secs: int
    llm_max_retries: int
    tool_timeout_secs: int
    max_tool_result_text_bytes: int
    max_tool_calls_per_response: int
    mcp_init_timeout_secs: int
    request_permission: bool
    prompt_caching: bool
    openai_max_tokens_field: Literal["max_completion_tokens", "max_tokens"]
    system_prompt: str
    no_hints: bool
    log_level: str

    def provider_settings(self) -> ProviderSettings:
        host = urlsplit(self.base_url).hostname or ""
        return ProviderSettings(
            route=self.route,
            base_url=self.base_url,
            api_key=self.api_key.get_secret_value(),
            model=self.model,
            anthropic_version=self.anthropic_version,
            anthropic_thinking=self.anthropic_thinking,
            prompt_caching=self.prompt_caching,
            max_tokens_field=self.openai_max_tokens_field,
            may_switch_to_responses=self.provider == "openai" and _is_openai_host(host),
        )

    @property
    def trim_threshold(self) -> int:
        """Estimated prompt tokens above which history is trimmed (§2.9)."""
        by_percent = (
            self.handoff_percent * (self.max_context_tokens - self.max_output_tokens) // 100
        )
        if self.handoff_at_tokens is None:
            return by_percent
        return min(by_percent, self.handoff_at_tokens)


def _is_openai_host(host: str) -> bool:
    return host == "openai.com" or host.endswith(".openai.com")


class _Env:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def text(self, name: str, default: str = "") -> str:
        return self._environ.get(name, default).strip()

    def secret(self, name: str) -> str:
        return self._environ.get(name, "").strip()

    def integer(self, name: str, default: int, low: int, high: int | None = None) -> int:
        raw = self.text(name)
        if raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{name}: expected an integer, got {raw!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"at least {low}" if high is None else f"between {low} and {high}"
            raise ConfigError(f"{name}: must be {bounds}, got {value}")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        raw = self.text(name).lower()
        if raw == "":
            return default
        if raw in _TRUE:
            return True
        if raw in _FALSE:
            return False
        raise ConfigError(
            f"{name}: expected a boolean (1/0, true/false, yes/no, on/off), got {raw!r}"
        )

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        raw = self.text(name, default) or default
        if raw not in allowed:
            raise ConfigError(f"{name}: expected one of {', '.join(allowed)}, got {raw!r}")
        return raw


def _system_prompt(env: _Env) -> str:
    inline = env.text("BUZZ_AGENT_SYSTEM_PROMPT")
    path = env.text("BUZZ_AGENT_SYSTEM_PROMPT_FILE")
    if inline and path:
        raise ConfigError("BUZZ_AGENT_SYSTEM_PROMPT and BUZZ_AGENT_SYSTEM_PROMPT_FILE are both set")
    if not path:
        return inline or DEFAULT_SYSTEM_PROMPT
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"BUZZ_AGENT_SYSTEM_PROMPT_FILE: cannot read {path!r}: {exc.strerror or exc}"
        ) from None
    if len(data) > _MAX_PROMPT_FILE_BYTES:
        raise ConfigError(f"BUZZ_AGENT_SYSTEM_PROMPT_FILE: {path!r} is larger than 1 MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"BUZZ_AGENT_SYSTEM_PROMPT_FILE: {path!r} is not UTF-8") from None


def _endpoint(env: _Env, provider: str) -> tuple[str, str, str, Route]:
    """(model, api key, base url, route) for the provider."""
    override = env.text("BUZZ_AGENT_MODEL")
    if provider == "anthropic":
        model = override or env.text("ANTHROPIC_MODEL")
        key = env.secret("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigError("ANTHROPIC_API_KEY is required for the anthropic provider")
        base = env.text("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
        route: Route = "anthropic"
    elif provider == "openrouter":
        model = override or env.text("OPENROUTER_MODEL")
        key = env.secret("OPENROUTER_API_KEY")
        if not key:
            raise ConfigError("OPENROUTER_API_KEY is required for the openrouter provider")
        base = env.text("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1")
        route = "chat"
    else:
        model = override or env.text("OPENAI_COMPAT_MODEL")
        key = env.secret("OPENAI_COMPAT_API_KEY")
        base = env.text("OPENAI_COMPAT_BASE_URL", "https://api.openai.com/v1")
        host = urlsplit(base).hostname or ""
        if not key and _is_openai_host(host):
            raise ConfigError("OPENAI_COMPAT_API_KEY is required for api.openai.com")
        api = env.choice("OPENAI_COMPAT_API", "auto", ("auto", "chat", "responses"))
        route = (
            "responses"
            if api == "responses" or (api == "auto" and _is_openai_host(host))
            else "chat"
        )
    if not model:
        raise ConfigError("BUZZ_AGENT_MODEL is not set (nor the provider's *_MODEL variable)")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"base URL must be an http(s) URL, got {base!r}")
    return model, key, base.rstrip("/"), route


def load_config(environ: Mapping[str, str]) -> AgentConfig:
    env = _Env(environ)
    raw_provider = env.text("BUZZ_AGENT_PROVIDER").lower()
    if not raw_provider:
        raise ConfigError("BUZZ_AGENT_PROVIDER is required (openai, anthropic or openrouter)")
    provider = _PROVIDER_ALIASES.get(raw_provider)
    if provider is None:
        raise ConfigError(f"BUZZ_AGENT_PROVIDER: unsupported provider {raw_provider!r}")
    model, key, base_url, route = _endpoint(env, provider)
    effort = env.text("BUZZ_AGENT_THINKING_EFFORT").lower() or None
    try:
        validate_effort(effort, provider)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    max_context = env.integer("BUZZ_AGENT_MAX_CONTEXT_TOKENS", 200_000, 1024)
    max_output = env.integer("BUZZ_AGENT_MAX_OUTPUT_TOKENS", 32_768, 1)
    if max_output >= max_context:
        raise ConfigError(
            f"BUZZ_AGENT_MAX_OUTPUT_TOKENS ({max_output}) must be smaller than "
            f"BUZZ_AGENT_MAX_CONTEXT_TOKENS ({max_context})"
        )
    handoff_at = (
        env.integer("BUZZ_AGENT_HANDOFF_AT_TOKENS", 0, 1)
        if env.text("BUZZ_AGENT_HANDOFF_AT_TOKENS")
        else None
    )
    return AgentConfig(
        provider=provider,  # type: ignore[arg-type]
        model=model,
        api_key=SecretStr(key),
        base_url=base_url,
        route=route,
        anthropic_version=env.text("ANTHROPIC_API_VERSION", "2023-06-01") or "2023-06-01",
        effort=effort,
        anthropic_thinking=env.choice(
            "BUZZ_AGENT_ANTHROPIC_THINKING", "budget", ("budget", "adaptive")
        ),  # type: ignore[arg-type]
        max_output_tokens=max_output,
        max_context_tokens=max_context,
        handoff_percent=env.integer("BUZZ_AGENT_HANDOFF_PERCENT", 90, 1, 100),
        handoff_at_tokens=handoff_at,
        max_rounds=env.integer("BUZZ_AGENT_MAX_ROUNDS", 0, 0),
        max_token_recoveries=env.integer("BUZZ_AGENT_MAX_TOKEN_RECOVERIES", 3, 0),
        llm_timeout_secs=env.integer("BUZZ_AGENT_LLM_TIMEOUT_SECS", 240, 1),
        llm_max_retries=env.integer("BUZZ_AGENT_LLM_MAX_RETRIES", 5, 0, 100),
        tool_timeout_secs=env.integer("BUZZ_AGENT_TOOL_TIMEOUT_SECS", 660, 1),
        max_tool_result_text_bytes=env.integer(
            "BUZZ_AGENT_MAX_TOOL_RESULT_TEXT_BYTES", 51_200, 1024
        ),
        max_tool_calls_per_response=env.integer("BUZZ_AGENT_MAX_TOOL_CALLS_PER_RESPONSE", 64, 1),
        mcp_init_timeout_secs=env.integer("BUZZ_AGENT_MCP_INIT_TIMEOUT_SECS", 30, 1),
        request_permission=env.boolean("BUZZ_AGENT_REQUEST_PERMISSION", True),
        prompt_caching=env.boolean("BUZZ_AGENT_PROMPT_CACHING", True),
        openai_max_tokens_field=env.choice(  # type: ignore[arg-type]
            "BUZZ_AGENT_OPENAI_MAX_TOKENS_FIELD",
            "max_completion_tokens",
            ("max_completion_tokens", "max_tokens"),
        ),
        system_prompt=_system_prompt(env),
        no_hints=env.boolean("BUZZ_AGENT_NO_HINTS", False),
        log_level=env.choice("BUZZ_AGENT_LOG_LEVEL", "info", ("debug", "info", "warning", "error")),
    )
