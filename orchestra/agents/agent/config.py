"""buzz-agent configuration from the environment (agent-harness.md §2.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from orchestra.agents.llm import budget
from orchestra.agents.llm.client import ProviderSettings
from orchestra.agents.llm.effort import AnthropicThinking, validate_effort
from orchestra.agents.llm.types import Route
from orchestra.settings import (
    InvalidValue,
    Setting,
    SettingError,
    Word,
    boolean,
    choice,
    fold,
    integer,
    strip,
    text,
    text_file,
)

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant that works by calling tools."
Provider = Literal["openai", "anthropic", "openrouter"]
MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
_PROVIDER_ALIASES: dict[str, Provider] = {
    "openai": "openai",
    "openai-compat": "openai",
    "anthropic": "anthropic",
    "openrouter": "openrouter",
}


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    provider: Provider
    model: str
    api_key: SecretStr
    base_url: str
    route: Route
    anthropic_version: str
    effort: str | None
    anthropic_thinking: AnthropicThinking
    max_output_tokens: int
    max_context_tokens: int
    handoff_percent: int
    handoff_at_tokens: int | None
    max_rounds: int
    max_repeated_calls: int  # 0: no limit
    max_token_recoveries: int
    llm_timeout_secs: int
    llm_max_retries: int
    retry_budget: int
    retry_budget_secs: int
    tool_timeout_secs: int
    max_tool_result_text_bytes: int
    max_tool_calls_per_response: int
    mcp_init_timeout_secs: int
    request_permission: bool
    prompt_caching: bool
    openai_max_tokens_field: MaxTokensField
    system_prompt: str
    no_hints: bool
    log_level: str
    trajectory_log: str | None

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


def _text(variable: str, default: str = "") -> Setting[str]:
    """As written, stripped; empty when set empty."""
    return Setting(variable, text, default, tidy=strip)


def _number(variable: str, default: int | None, low: int, high: int | None = None) -> Setting[int]:
    return Setting(
        variable,
        integer(low, high),
        None if default is None else str(default),
        tidy=strip,
        empty_is_unset=True,
    )


def _switch(variable: str, default: bool) -> Setting[bool]:
    return Setting(variable, boolean, str(default), tidy=fold, empty_is_unset=True)


def _choice(variable: str, default: Word, allowed: tuple[Word, ...]) -> Setting[Word]:
    """One of `allowed`; `default` when unset or empty."""
    return Setting(variable, choice(*allowed), default, tidy=strip, empty_is_unset=True)


def _provider(value: str) -> Provider:
    provider = _PROVIDER_ALIASES.get(value)
    if provider is None:
        raise InvalidValue(f"unsupported provider {value!r}")
    return provider


PROVIDER = Setting("BUZZ_AGENT_PROVIDER", _provider, tidy=fold, empty_is_unset=True)
MODEL = _text("BUZZ_AGENT_MODEL")
ANTHROPIC_MODEL = _text("ANTHROPIC_MODEL")
ANTHROPIC_API_KEY = _text("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = _text("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
ANTHROPIC_API_VERSION = Setting(
    "ANTHROPIC_API_VERSION", text, "2023-06-01", tidy=strip, empty_is_unset=True
)
OPENROUTER_MODEL = _text("OPENROUTER_MODEL")
OPENROUTER_API_KEY = _text("OPENROUTER_API_KEY")
OPENROUTER_BASE_URL = _text("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1")
OPENAI_COMPAT_MODEL = _text("OPENAI_COMPAT_MODEL")
OPENAI_COMPAT_API_KEY = _text("OPENAI_COMPAT_API_KEY")
OPENAI_COMPAT_BASE_URL = _text("OPENAI_COMPAT_BASE_URL", "https://api.openai.com/v1")
OPENAI_COMPAT_API = _choice("OPENAI_COMPAT_API", "auto", ("auto", "chat", "responses"))
THINKING_EFFORT = Setting("BUZZ_AGENT_THINKING_EFFORT", text, tidy=fold, empty_is_unset=True)
ANTHROPIC_THINKING: Setting[AnthropicThinking] = _choice(
    "BUZZ_AGENT_ANTHROPIC_THINKING", "budget", ("budget", "adaptive")
)
MAX_OUTPUT_TOKENS = _number("BUZZ_AGENT_MAX_OUTPUT_TOKENS", 32_768, 1)
MAX_CONTEXT_TOKENS = _number("BUZZ_AGENT_MAX_CONTEXT_TOKENS", 200_000, 1024)
HANDOFF_PERCENT = _number("BUZZ_AGENT_HANDOFF_PERCENT", 90, 1, 100)
HANDOFF_AT_TOKENS = _number("BUZZ_AGENT_HANDOFF_AT_TOKENS", None, 1)
MAX_ROUNDS = _number("BUZZ_AGENT_MAX_ROUNDS", 0, 0)
MAX_REPEATED_CALLS = _number("BUZZ_AGENT_MAX_REPEATED_CALLS", 0, 0)
MAX_TOKEN_RECOVERIES = _number("BUZZ_AGENT_MAX_TOKEN_RECOVERIES", 3, 0)
LLM_TIMEOUT_SECS = _number("BUZZ_AGENT_LLM_TIMEOUT_SECS", 240, 1)
LLM_MAX_RETRIES = _number("BUZZ_AGENT_LLM_MAX_RETRIES", 5, 0, 100)
RETRY_BUDGET = _number("BUZZ_AGENT_RETRY_BUDGET", budget.DEFAULT_RETRIES, 0, 1000)
RETRY_BUDGET_SECS = _number("BUZZ_AGENT_RETRY_BUDGET_SECS", budget.DEFAULT_SECS, 1)
TOOL_TIMEOUT_SECS = _number("BUZZ_AGENT_TOOL_TIMEOUT_SECS", 660, 1)
MAX_TOOL_RESULT_TEXT_BYTES = _number("BUZZ_AGENT_MAX_TOOL_RESULT_TEXT_BYTES", 51_200, 1024)
MAX_TOOL_CALLS_PER_RESPONSE = _number("BUZZ_AGENT_MAX_TOOL_CALLS_PER_RESPONSE", 64, 1)
MCP_INIT_TIMEOUT_SECS = _number("BUZZ_AGENT_MCP_INIT_TIMEOUT_SECS", 30, 1)
REQUEST_PERMISSION = _switch("BUZZ_AGENT_REQUEST_PERMISSION", True)
PROMPT_CACHING = _switch("BUZZ_AGENT_PROMPT_CACHING", True)
OPENAI_MAX_TOKENS_FIELD: Setting[MaxTokensField] = _choice(
    "BUZZ_AGENT_OPENAI_MAX_TOKENS_FIELD",
    "max_completion_tokens",
    ("max_completion_tokens", "max_tokens"),
)
SYSTEM_PROMPT = Setting("BUZZ_AGENT_SYSTEM_PROMPT", text, tidy=strip, empty_is_unset=True)
SYSTEM_PROMPT_FILE = Setting(
    "BUZZ_AGENT_SYSTEM_PROMPT_FILE", text_file, tidy=strip, empty_is_unset=True
)
NO_HINTS = _switch("BUZZ_AGENT_NO_HINTS", False)
TRAJECTORY_LOG = Setting("BUZZ_AGENT_TRAJECTORY_LOG", text, tidy=strip, empty_is_unset=True)
LOG_LEVEL = _choice("BUZZ_AGENT_LOG_LEVEL", "info", ("debug", "info", "warning", "error"))
#: Accepted for compatibility and ignored (§2.1).
IGNORED_VARIABLES = (
    "BUZZ_AGENT_THINKING_SUMMARY",
    "BUZZ_AGENT_MAX_HANDOFFS",
    "BUZZ_AGENT_STRICT_TOOLS",
    "BUZZ_AGENT_MAX_PARALLEL_TOOLS",
    "BUZZ_AGENT_REQUIRE_REPLY",
)


def _system_prompt(env: Mapping[str, str]) -> str:
    if SYSTEM_PROMPT.text(env) is not None and SYSTEM_PROMPT_FILE.text(env) is not None:
        raise SettingError(
            None, "BUZZ_AGENT_SYSTEM_PROMPT and BUZZ_AGENT_SYSTEM_PROMPT_FILE are both set"
        )
    from_file = SYSTEM_PROMPT_FILE.get(env)
    if from_file is not None:
        return from_file
    return SYSTEM_PROMPT.get(env) or DEFAULT_SYSTEM_PROMPT


#: The providers whose API key is always required: (model, key, base URL) settings and route.
_KEYED_PROVIDERS: dict[str, tuple[Setting[str], Setting[str], Setting[str], Route]] = {
    "anthropic": (ANTHROPIC_MODEL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, "anthropic"),
    "openrouter": (OPENROUTER_MODEL, OPENROUTER_API_KEY, OPENROUTER_BASE_URL, "chat"),
}


def _endpoint(env: Mapping[str, str], provider: str) -> tuple[str, str, str, Route]:
    """(model, api key, base url, route) for the provider."""
    override = MODEL.value(env)
    route: Route
    if provider in _KEYED_PROVIDERS:
        model_setting, key_setting, base_setting, route = _KEYED_PROVIDERS[provider]
        model = override or model_setting.value(env)
        key = key_setting.value(env)
        if not key:
            raise SettingError(
                key_setting.variable, f"is required for the {provider} provider", joiner=" "
            )
        base = base_setting.value(env)
    else:
        model = override or OPENAI_COMPAT_MODEL.value(env)
        key = OPENAI_COMPAT_API_KEY.value(env)
        base = OPENAI_COMPAT_BASE_URL.value(env)
        host = urlsplit(base).hostname or ""
        if not key and _is_openai_host(host):
            raise SettingError(
                "OPENAI_COMPAT_API_KEY", "is required for api.openai.com", joiner=" "
            )
        api = OPENAI_COMPAT_API.value(env)
        route = (
            "responses"
            if api == "responses" or (api == "auto" and _is_openai_host(host))
            else "chat"
        )
    if not model:
        raise SettingError(
            "BUZZ_AGENT_MODEL",
            "is not set (nor the provider's *_MODEL variable)",
            joiner=" ",
        )
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingError(None, f"base URL must be an http(s) URL, got {base!r}")
    return model, key, base.rstrip("/"), route


def load_config(environ: Mapping[str, str]) -> AgentConfig:
    """Raises SettingError with a one-line message naming the variable (never a secret)."""
    provider = PROVIDER.get(environ)
    if provider is None:
        raise SettingError(
            "BUZZ_AGENT_PROVIDER", "is required (openai, anthropic or openrouter)", joiner=" "
        )
    model, key, base_url, route = _endpoint(environ, provider)
    effort = THINKING_EFFORT.get(environ)
    try:
        validate_effort(effort, provider)
    except ValueError as exc:
        raise SettingError(None, str(exc)) from None
    max_context = MAX_CONTEXT_TOKENS.value(environ)
    max_output = MAX_OUTPUT_TOKENS.value(environ)
    if max_output >= max_context:
        raise SettingError(
            "BUZZ_AGENT_MAX_OUTPUT_TOKENS",
            f"({max_output}) must be smaller than BUZZ_AGENT_MAX_CONTEXT_TOKENS ({max_context})",
            joiner=" ",
        )
    handoff_at = HANDOFF_AT_TOKENS.get(environ)
    return AgentConfig(
        provider=provider,
        model=model,
        api_key=SecretStr(key),
        base_url=base_url,
        route=route,
        anthropic_version=ANTHROPIC_API_VERSION.value(environ),
        effort=effort,
        anthropic_thinking=ANTHROPIC_THINKING.value(environ),
        max_output_tokens=max_output,
        max_context_tokens=max_context,
        handoff_percent=HANDOFF_PERCENT.value(environ),
        handoff_at_tokens=handoff_at,
        max_rounds=MAX_ROUNDS.value(environ),
        max_repeated_calls=MAX_REPEATED_CALLS.value(environ),
        max_token_recoveries=MAX_TOKEN_RECOVERIES.value(environ),
        llm_timeout_secs=LLM_TIMEOUT_SECS.value(environ),
        llm_max_retries=LLM_MAX_RETRIES.value(environ),
        retry_budget=RETRY_BUDGET.value(environ),
        retry_budget_secs=RETRY_BUDGET_SECS.value(environ),
        tool_timeout_secs=TOOL_TIMEOUT_SECS.value(environ),
        max_tool_result_text_bytes=MAX_TOOL_RESULT_TEXT_BYTES.value(environ),
        max_tool_calls_per_response=MAX_TOOL_CALLS_PER_RESPONSE.value(environ),
        mcp_init_timeout_secs=MCP_INIT_TIMEOUT_SECS.value(environ),
        request_permission=REQUEST_PERMISSION.value(environ),
        prompt_caching=PROMPT_CACHING.value(environ),
        openai_max_tokens_field=OPENAI_MAX_TOKENS_FIELD.value(environ),
        system_prompt=_system_prompt(environ),
        no_hints=NO_HINTS.value(environ),
        log_level=LOG_LEVEL.value(environ),
        trajectory_log=TRAJECTORY_LOG.get(environ),
    )
