"""OpenAI Responses route (agent-harness.md §2.5)."""

from __future__ import annotations

import json
from typing import Any

from orchestra.agents.llm.effort import responses_fields
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.openai_chat import tool_result_text
from orchestra.agents.llm.types import (
    AssistantMessage,
    Conversation,
    LLMResponse,
    Outcome,
    ToolCall,
    Usage,
    UserMessage,
    as_int,
)

PATH = "/responses"


def _input(conv: Conversation) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for item in conv.history:
        if isinstance(item, UserMessage):
            items.append(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": item.text}],
                }
            )
        elif isinstance(item, AssistantMessage):
            items.extend(item.replay)
            if item.said:
                # The SDK's EasyInputMessageParam: an output message (`output_text` parts)
                # would need the response's item id and status, and with `store: false` an id
                # ties the message to reasoning items the server no longer holds.
                items.append({"type": "message", "role": "assistant", "content": item.said})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.replayed_arguments(),
                }
                for call in item.tool_calls
            )
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": item.call_id,
                    "output": tool_result_text(item),
                }
            )
    return items


def build_body(conv: Conversation) -> dict[str, Any]:
    body: dict[str, Any] = {"model": conv.model, "instructions": conv.system, "input": _input(conv)}
    if conv.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                # Required by the API's type; left out, the server may apply strict mode, which
                # makes every optional parameter of our MCP tools' schemas required.
                "strict": False,
            }
            for t in conv.tools
        ]
        if conv.require_tool_call:
            body["tool_choice"] = "required"
    body.update(responses_fields(conv.effort))
    body["max_output_tokens"] = conv.max_output_tokens
    body["store"] = False
    body["include"] = ["reasoning.encrypted_content"]
    return body


def _usage(raw: Any) -> Usage:
    raw = raw if isinstance(raw, dict) else {}
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")),
        output_tokens=as_int(raw.get("output_tokens")),
        cached_tokens=as_int((raw.get("input_tokens_details") or {}).get("cached_tokens")),
        reasoning_tokens=as_int((raw.get("output_tokens_details") or {}).get("reasoning_tokens")),
        llm_calls=1,
    )


def _summary_text(reasoning: dict[str, Any]) -> str:
    return "\n".join(
        part.get("text", "") for part in reasoning.get("summary") or [] if isinstance(part, dict)
    )


def parse_response(data: Any) -> LLMResponse:
    output = data.get("output") if isinstance(data, dict) else None
    if not isinstance(output, list):
        raise LLMError("llm_bad_response", "response has no output list")
    texts: list[str] = []
    refusals: list[str] = []
    thoughts: list[str] = []
    replay: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for item in output:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "reasoning":
            replay.append(item)
            thoughts.append(_summary_text(item))
        elif kind == "message":
            for part in item.get("content") or []:
                part_kind = part.get("type") if isinstance(part, dict) else None
                if part_kind == "output_text":
                    texts.append(str(part.get("text") or ""))
                elif part_kind == "refusal":
                    refusals.append(str(part.get("refusal") or ""))
        elif kind == "function_call":
            arguments = item.get("arguments")
            calls.append(
                ToolCall(
                    id=str(item.get("call_id") or item.get("id") or f"call_{len(calls) + 1}"),
                    name=str(item.get("name") or ""),
                    arguments=arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments or {}),
                )
            )
    status = str(data.get("status") or "completed")
    reason = str((data.get("incomplete_details") or {}).get("reason") or "")
    outcome: Outcome
    if status == "incomplete" and reason == "max_output_tokens":
        outcome = "truncated"
    elif calls:
        outcome = "tool_calls"
    elif reason == "content_filter" or refusals:
        outcome = "refusal"
    else:
        outcome = "end_turn"
    return LLMResponse(
        message=AssistantMessage(
            text="".join(texts), tool_calls=calls, replay=replay, refusal="".join(refusals)
        ),
        outcome=outcome,
        finish_reason=reason or status,
        usage=_usage(data.get("usage")),
        thought="\n".join(t for t in thoughts if t),
    )
