"""Anthropic Messages route (agent-harness.md §2.6)."""

from __future__ import annotations

import json
from typing import Any

from orchestra.agents.llm.effort import AnthropicThinking, anthropic_fields
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.types import (
    AssistantMessage,
    Conversation,
    LLMResponse,
    Outcome,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    as_int,
)

PATH = "/v1/messages"
_EPHEMERAL = {"type": "ephemeral"}
_STOP_OUTCOMES: dict[str, Outcome] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_calls",
    "max_tokens": "truncated",
    "pause_turn": "pause",
    "refusal": "refusal",
    "model_context_window_exceeded": "context_exceeded",
}


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks = list(message.replay)
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        try:
            arguments = call.parsed_arguments()
        except ValueError:
            arguments = {}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def _user_block(item: UserMessage | ToolResult) -> dict[str, Any]:
    if isinstance(item, UserMessage):
        return {"type": "text", "text": item.text}
    return {
        "type": "tool_result",
        "tool_use_id": item.call_id,
        "content": item.text,
        "is_error": item.is_error,
    }


def _messages(conv: Conversation) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for item in conv.history:
        if isinstance(item, AssistantMessage):
            blocks = _assistant_blocks(item)
            if blocks:  # an empty final answer is not a valid Anthropic message
                messages.append({"role": "assistant", "content": blocks})
            continue
        block = _user_block(item)
        # Tool results and any follow-up text share one user message, as the API requires.
        if messages and messages[-1]["role"] == "user":
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": "user", "content": [block]})
    return messages


def build_body(conv: Conversation, thinking: AnthropicThinking, caching: bool) -> dict[str, Any]:
    system: dict[str, Any] = {"type": "text", "text": conv.system}
    messages = _messages(conv)
    tools = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in conv.tools
    ]
    if caching:
        system["cache_control"] = _EPHEMERAL
        if tools:
            tools[-1]["cache_control"] = _EPHEMERAL
        newest_user = next((m for m in reversed(messages) if m["role"] == "user"), None)
        if newest_user is not None:
            last_block = dict(newest_user["content"][-1], cache_control=_EPHEMERAL)
            newest_user["content"] = [*newest_user["content"][:-1], last_block]
    body: dict[str, Any] = {
        "model": conv.model,
        "max_tokens": conv.max_output_tokens,
        "system": [system],
        "messages": messages,
    }
    if tools:
        body["tools"] = tools
        if conv.require_tool_call:
            body["tool_choice"] = {"type": "any"}
    body.update(anthropic_fields(conv.effort, thinking, conv.max_output_tokens))
    return body


def _usage(raw: Any) -> Usage:
    raw = raw if isinstance(raw, dict) else {}
    cache_read = as_int(raw.get("cache_read_input_tokens"))
    cache_write = as_int(raw.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")) + cache_read + cache_write,
        output_tokens=as_int(raw.get("output_tokens")),
        cached_tokens=cache_read,
        cache_write_tokens=cache_write,
        llm_calls=1,
    )


def parse_response(data: Any) -> LLMResponse:
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, list):
        raise LLMError("llm_bad_response", "response has no content list")
    texts: list[str] = []
    thoughts: list[str] = []
    replay: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in ("thinking", "redacted_thinking"):
            replay.append(block)
            if kind == "thinking":
                thoughts.append(str(block.get("thinking") or ""))
        elif kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=str(block.get("id") or f"toolu_{len(calls) + 1}"),
                    name=str(block.get("name") or ""),
                    arguments=json.dumps(block.get("input") or {}),
                )
            )
    stop_reason = str(data.get("stop_reason") or "end_turn")
    outcome = _STOP_OUTCOMES.get(stop_reason, "end_turn")
    if outcome == "end_turn" and calls:
        outcome = "tool_calls"
    return LLMResponse(
        message=AssistantMessage(text="".join(texts), tool_calls=calls, replay=replay),
        outcome=outcome,
        finish_reason=stop_reason,
        usage=_usage(data.get("usage")),
        thought="\n".join(t for t in thoughts if t),
    )
