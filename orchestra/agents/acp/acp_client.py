"""The ACP client side of one agent process (agent-harness.md §1.7).

Permissions are always granted; session updates, usage and heartbeats are routed to the
turn currently running on their session.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)
from pydantic import ValidationError

from orchestra.agents.acp.eventlog import EventLog
from orchestra.agents.acp.records import LlmRetry, ToolCall, Usage

AGENT_MESSAGE_LIMIT = 8 * 1024
USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cachedTokens": "cached_input_tokens",
    "cacheWriteTokens": "cache_write_input_tokens",
    "reasoningTokens": "reasoning_tokens",
    "llmCalls": "llm_calls",
}
#: buzz-agent's notification of each provider retry → an `llm_retry` record (§1.11).
LLM_RETRY_METHOD = "buzz/llm_retry"
LLM_RETRY_KEYS = {
    "httpStatus": "http_status",
    "failureClass": "failure_class",
    "retriesUsed": "retries_used",
    "retryBudget": "retry_budget",
    "retryInS": "retry_in_s",
}
log = logging.getLogger("buzz_acp")
usage_log = logging.getLogger("acp::usage")


def snake_usage(usage: Any) -> dict[str, int]:
    """camelCase usage counters → the snake_case names of §1.11; missing fields count as 0."""
    source = usage if isinstance(usage, dict) else {}
    out: dict[str, int] = {}
    for camel, snake in USAGE_KEYS.items():
        value = source.get(camel, 0)
        out[snake] = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return out


@dataclass
class TurnTracker:
    """What a running turn collects from the agent's notifications."""

    turn_id: str
    channel_id: str
    session_id: str
    last_activity: float = field(default_factory=time.monotonic)
    message: list[str] = field(default_factory=list)
    session_usage: dict[str, int] | None = None

    def touch(self) -> None:
        self.last_activity = time.monotonic()

    def message_text(self) -> tuple[str, bool]:
        text = "".join(self.message)
        data = text.encode("utf-8")
        if len(data) <= AGENT_MESSAGE_LIMIT:
            return text, False
        return data[:AGENT_MESSAGE_LIMIT].decode("utf-8", errors="ignore"), True


class BridgeClient:
    """An `acp.Client` for one slot; `turns` maps session id → the running turn."""

    def __init__(self, events: EventLog, on_session_usage: Callable[[str, dict[str, int]], None]):
        self._events = events
        self._on_session_usage = on_session_usage
        self.turns: dict[str, TurnTracker] = {}

    def touch(self, session_id: str) -> None:
        tracker = self.turns.get(session_id)
        if tracker is not None:
            tracker.touch()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        chosen = next((o for o in options if o.kind == "allow_always"), None) or next(
            (o for o in options if o.kind == "allow_once"), None
        )
        title = tool_call.title
        if chosen is None:
            log.debug("permission request without an allow option cancelled: %s", title)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        log.debug("permission granted (%s): %s", chosen.kind, title)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        tracker = self.turns.get(session_id)
        if tracker is None:
            return  # a late update after its turn ended: consumed, nothing to attribute
        if isinstance(update, ToolCallStart | ToolCallProgress):
            self._events.emit(
                ToolCall(
                    turn_id=tracker.turn_id,
                    channel_id=tracker.channel_id,
                    tool_call_id=update.tool_call_id,
                    title=update.title,
                    status=update.status or "pending",
                )
            )
        elif isinstance(update, AgentMessageChunk):
            text = getattr(update.content, "text", None)
            if isinstance(text, str):
                tracker.message.append(text)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            return
        if method == "goose/unstable/session/update" and isinstance(params.get("usage"), dict):
            usage = snake_usage(params["usage"])
            usage_log.info(
                "goose usage update session_id=%s input=%d output=%d cached=%d",
                session_id,
                usage["input_tokens"],
                usage["output_tokens"],
                usage["cached_input_tokens"],
            )
            self._on_session_usage(session_id, usage)
            tracker = self.turns.get(session_id)
            if tracker is not None:
                tracker.session_usage = usage
            self._events.emit(
                Usage.model_validate(
                    {
                        "turn_id": tracker.turn_id if tracker else None,
                        "channel_id": tracker.channel_id if tracker else None,
                        "session_id": session_id,
                        **usage,
                    }
                )
            )

        elif method == LLM_RETRY_METHOD:
            tracker = self.turns.get(session_id)
            fields = {snake: params.get(camel) for camel, snake in LLM_RETRY_KEYS.items()}
            try:
                record = LlmRetry.model_validate(
                    {
                        "turn_id": tracker.turn_id if tracker else None,
                        "channel_id": tracker.channel_id if tracker else None,
                        "session_id": session_id,
                        **fields,
                    }
                )
            except ValidationError as error:
                log.warning("malformed %s notification ignored: %s", method, error)
                return
            self._events.emit(record)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("fs/read_text_file")

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/kill")
