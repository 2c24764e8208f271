"""OpenAI-compatible Chat Completions route (agent-harness.md §2.5)."""

from __future__ import annotations

import json
from typing import Any

from orchestra.agents.llm.effort import chat_fields
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

PATH = "/chat/completions"


def tool_result_text(result: ToolResult) -> str:
    # OpenAI routes have no error flag on tool results, so the text carries it.
    return f"ERROR: {result.text}" if result.is_error else result.text


def _messages(conv: Conversation) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": conv.system}]
    for item in conv.history:
        if isinstance(item, UserMessage):
            messages.append({"role": "user", "content": item.text})
        elif isinstance(item, AssistantMessage):
            message: dict[str, Any] = {"role": "assistant", "content": item.text or None}
            if item.refusal:
                message["refusal"] = item.refusal
            if item.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.replayed_arguments()},
                    }
                    for call in item.tool_calls
                ]
            elif not item.text and not item.refusal:
                message["content"] = ""
            messages.append(message)
        else:
            messages.append(
                {"role": "tool", "tool_call_id": item.call_id, "content": tool_result_text(item)}
            )
    return messages


def build_body(conv: Conversation, max_tokens_field: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": conv.model, "messages": _messages(conv)}
    if conv.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in conv.tools
        ]
        body["tool_choice"] = "required" if conv.require_tool_call else "auto"
    body[max_tokens_field] = conv.max_output_tokens
    body.update(chat_fields(conv.effort))
    body["stream"] = False
    return body


def _usage(raw: Any) -> Usage:
    raw = raw if isinstance(raw, dict) else {}
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=as_int(raw.get("prompt_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")),
        cached_tokens=as_int(prompt_details.get("cached_tokens")),
        reasoning_tokens=as_int(completion_details.get("reasoning_tokens")),
        llm_calls=1,
    )


def _content_text(content: Any) -> str:
    """A string, or (some compatible servers) a list of `{type: "text", text}` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "output_text")
        )
    return ""


def _outcome(finish_reason: str, has_tool_calls: bool, refused: bool) -> Outcome:
    if finish_reason == "length":
        return "truncated"
    if has_tool_calls:
        return "tool_calls"
    if finish_reason == "content_filter" or refused:
        return "refusal"
    return "end_turn"


def parse_response(data: Any) -> LLMResponse:
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise LLMError("llm_bad_response", "response has no choices[0]") from None
    calls: list[ToolCall] = []
    for index, raw_call in enumerate(message.get("tool_calls") or []):
        function = raw_call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = "{}" if arguments is None else json.dumps(arguments)
        calls.append(
            ToolCall(
                id=raw_call.get("id") or f"call_{index + 1}",
                name=str(function.get("name") or ""),
                arguments=arguments,
            )
        )
    text = _content_text(message.get("content"))
    finish_reason = str(choice.get("finish_reason") or "stop")
    thought = message.get("reasoning_content")
    refusal = message.get("refusal")
    refusal = refusal if isinstance(refusal, str) else ""
    return LLMResponse(
        message=AssistantMessage(text=text, tool_calls=calls, refusal=refusal),
        outcome=_outcome(finish_reason, bool(calls), bool(refusal)),
        finish_reason=finish_reason,
        usage=_usage(data.get("usage")),
        thought=thought if isinstance(thought, str) else "",
    )
