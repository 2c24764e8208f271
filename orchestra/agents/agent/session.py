"""State of one ACP session and the client notifications it sends (agent-harness.md §2.2, §2.11)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

from orchestra.agents.agent.tools import ToolBox, tool_kind
from orchestra.agents.agent.trimming import ContextMeter
from orchestra.agents.llm.budget import RetryBudget
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.types import HistoryItem, ToolCall, Usage

log = logging.getLogger("buzz_agent")

TOOL_UPDATE_CONTENT_CHARS = 2048
TITLE_ARGUMENT_CHARS = 80
USAGE_METHOD = "goose/unstable/session/update"  # the SDK prefixes the underscore
HEARTBEAT_METHOD = "buzz/heartbeat"
#: A provider call failed and is retried (buzz-acp writes an `llm_retry` record, §1.11).
LLM_RETRY_METHOD = "buzz/llm_retry"


def new_session_id() -> str:
    return "ses_" + secrets.token_hex(12)


@dataclass
class Session:
    id: str
    cwd: str
    system: str
    toolbox: ToolBox
    meter: ContextMeter
    heartbeat_secs: float
    history: list[HistoryItem] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    turn_task: asyncio.Task[Any] | None = None
    # Start of the round in progress: a cancel drops everything from here on.
    round_start: int = 0


class ClientChannel:
    """Notifications from buzz-agent to the ACP client about one session."""

    def __init__(self, conn: Any, session_id: str) -> None:
        self._conn = conn
        self._session_id = session_id

    async def _update(self, update: Any) -> None:
        await self._conn.session_update(session_id=self._session_id, update=update)

    async def message(self, text: str) -> None:
        from acp import update_agent_message_text

        await self._update(update_agent_message_text(text))

    async def thought(self, text: str) -> None:
        from acp import update_agent_thought_text

        await self._update(update_agent_thought_text(text))

    async def tool_started(self, call: ToolCall) -> None:
        from acp.schema import ToolCallStart

        await self._update(
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=call.id,
                title=tool_title(call),
                kind=tool_kind(call.name),
                status="in_progress",
                raw_input=_raw_input(call),
            )
        )

    async def tool_finished(self, call: ToolCall, text: str, is_error: bool) -> None:
        from acp import text_block, tool_content
        from acp.schema import ToolCallProgress

        await self._update(
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call.id,
                status="failed" if is_error else "completed",
                content=[tool_content(text_block(text[:TOOL_UPDATE_CONTENT_CHARS]))],
            )
        )

    async def may_run(self, call: ToolCall) -> bool:
        """Ask the client for permission; anything but an allow option means no."""
        from acp.schema import PermissionOption, ToolCallUpdate

        options = [
            PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
            PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
            PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
        ]
        response = await self._conn.request_permission(
            session_id=self._session_id,
            options=options,
            tool_call=ToolCallUpdate(
                tool_call_id=call.id,
                title=tool_title(call),
                kind=tool_kind(call.name),
                status="pending",
                raw_input=_raw_input(call),
            ),
        )
        outcome = response.outcome
        return getattr(outcome, "outcome", None) == "selected" and getattr(
            outcome, "option_id", ""
        ) in ("allow_once", "allow_always")

    async def usage(self, usage: Usage, model: str, effort: str | None) -> None:
        payload: dict[str, Any] = usage.to_wire() | {"model": model}
        if effort is not None:
            payload["effectiveEffort"] = effort
        await self._conn.ext_notification(
            USAGE_METHOD, {"sessionId": self._session_id, "usage": payload}
        )

    async def retrying(self, err: LLMError, delay: float, budget: RetryBudget) -> None:
        params: dict[str, Any] = {
            "sessionId": self._session_id,
            "failureClass": str(err.failure_class),
            "retriesUsed": budget.used,
            "retryBudget": budget.retries,
            "retryInS": round(delay, 1),
        }
        if err.status is not None:
            params["httpStatus"] = err.status
        await self._conn.ext_notification(LLM_RETRY_METHOD, params)

    async def heartbeats(self, interval: float) -> None:
        """Runs until cancelled; a failed send (client gone) just ends the heartbeats."""
        with contextlib.suppress(ConnectionError):
            while True:
                await asyncio.sleep(interval)
                await self._conn.ext_notification(HEARTBEAT_METHOD, {"sessionId": self._session_id})


def tool_title(call: ToolCall) -> str:
    return f"{call.name}: {call.arguments[:TITLE_ARGUMENT_CHARS]}"


def _raw_input(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments
