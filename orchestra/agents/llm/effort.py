"""Thinking-effort mapping per route (agent-harness.md §2.7)."""

from __future__ import annotations

import logging
from typing import Any, Literal

log = logging.getLogger("llm")

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
AnthropicThinking = Literal["budget", "adaptive"]
# Downgrade order when an OpenAI-compatible server rejects a level.
_DOWNGRADE = ("max", "xhigh", "high", "medium", "low", "minimal")
_ANTHROPIC_BUDGETS = {"low": 1024, "medium": 8192, "high": 32768, "xhigh": 32768, "max": 32768}
_MIN_BUDGET = 1024


def validate_effort(effort: str | None, provider: str) -> None:
    """Startup check; raises ValueError naming the variable."""
    if effort is None:
        return
    if effort not in EFFORTS:
        raise ValueError(
            f"BUZZ_AGENT_THINKING_EFFORT: expected one of {', '.join(EFFORTS)}, got {effort!r}"
        )
    if provider == "anthropic" and effort in ("none", "minimal"):
        raise ValueError(
            f"BUZZ_AGENT_THINKING_EFFORT: {effort!r} is not supported by the anthropic provider"
        )


def lower_effort(effort: str) -> str | None:
    """The nearest lower level, or None when there is none."""
    if effort not in _DOWNGRADE:
        return None
    index = _DOWNGRADE.index(effort)
    return _DOWNGRADE[index + 1] if index + 1 < len(_DOWNGRADE) else None


def chat_fields(effort: str | None) -> dict[str, Any]:
    return {} if effort is None else {"reasoning_effort": effort}


def responses_fields(effort: str | None) -> dict[str, Any]:
    return {} if effort is None else {"reasoning": {"effort": effort, "summary": "auto"}}


def anthropic_fields(
    effort: str | None, mode: AnthropicThinking, max_tokens: int
) -> dict[str, Any]:
    if effort is None:
        return {}
    if mode == "adaptive":
        return {"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}
    budget = min(_ANTHROPIC_BUDGETS[effort], max_tokens - 1024)
    if budget < _MIN_BUDGET:
        return {}
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def warn_if_budget_disabled(
    effort: str | None, mode: AnthropicThinking, max_tokens: int, provider: str
) -> None:
    if provider == "anthropic" and effort is not None and mode == "budget":
        if min(_ANTHROPIC_BUDGETS[effort], max_tokens - 1024) < _MIN_BUDGET:
            log.warning(
                "thinking disabled: BUZZ_AGENT_MAX_OUTPUT_TOKENS=%d leaves no room for a "
                "thinking budget of at least %d tokens",
                max_tokens,
                _MIN_BUDGET,
            )
