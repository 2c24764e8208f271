"""Provider-neutral conversation and response model shared by every route."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Route = Literal["chat", "responses", "anthropic"]
Outcome = Literal["end_turn", "tool_calls", "truncated", "refusal", "pause", "context_exceeded"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it (already `<server>__<tool>` named)."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it (may be invalid)

    def parsed_arguments(self) -> dict[str, Any]:
        """Raises ValueError when the arguments are not a JSON object."""
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError("arguments must be a JSON object")
        return value

    def arguments_are_valid(self) -> bool:
        try:
            self.parsed_arguments()
        except ValueError:
            return False
        return True

    def replayed_arguments(self) -> str:
        """The arguments as later requests carry them: the model's own text when it is a JSON
        object, else `{}`. OpenAI-compatible servers (vLLM, llama.cpp) parse every replayed
        `arguments` and reject a history holding invalid JSON with a 400; the call's tool result
        already tells the model its arguments were invalid and what the parser said."""
        return self.arguments if self.arguments_are_valid() else "{}"


@dataclass
class UserMessage:
    text: str
    # True for the user prompt that starts a turn; False for messages buzz-agent adds itself
    # (truncation continuations). Trimming drops whole turns at prompt boundaries.
    starts_turn: bool = True


@dataclass
class AssistantMessage:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    # Provider blocks replayed verbatim in later requests: Anthropic thinking/redacted_thinking
    # blocks, Responses `reasoning` items. Never shown to other providers.
    replay: list[dict[str, Any]] = field(default_factory=list)
    # The model's refusal (chat `message.refusal`, a Responses `refusal` content part): shown
    # and recorded like text, replayed in the route's refusal field where it has one.
    refusal: str = ""

    @property
    def said(self) -> str:
        """What the model said to the user: its text, else its refusal."""
        return self.text or self.refusal


@dataclass
class ToolResult:
    call_id: str
    text: str
    is_error: bool = False


HistoryItem = UserMessage | AssistantMessage | ToolResult


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0
    llm_calls: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_tokens += other.cached_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.llm_calls += other.llm_calls

    def to_wire(self) -> dict[str, int]:
        """The camelCase keys of agent-harness.md §2.11."""
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cachedTokens": self.cached_tokens,
            "reasoningTokens": self.reasoning_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "llmCalls": self.llm_calls,
        }


@dataclass
class LLMResponse:
    message: AssistantMessage
    outcome: Outcome
    finish_reason: str
    usage: Usage
    thought: str = ""  # reasoning text to show the client (never replayed unless in `replay`)


@dataclass(frozen=True)
class Conversation:
    """Everything a route needs to build one request."""

    model: str
    system: str
    history: list[HistoryItem]
    tools: list[ToolSpec]
    max_output_tokens: int
    effort: str | None
    # The model must call a tool (the endpoint check's capability probe); else it may.
    require_tool_call: bool = False


def as_int(value: Any) -> int:
    """Usage fields may be missing, null or floats on compatible servers; missing counts as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)
