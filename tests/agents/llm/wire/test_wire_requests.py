"""Every request body each route builds is a valid request of the provider's own SDK type, with
unknown keys forbidden (wire_sdk.py explains how): across efforts, tools, thinking modes and
replays of every kind of assistant turn. The assistant turns are parsed from replies built with
the SDKs' response models, so what is replayed is what the real API sent."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion
from openai.types.responses import Response
from pydantic import ValidationError
from wire_cases import (
    anthropic_reply,
    chat_reply,
    responses_reply,
)
from wire_sdk import validate_request

from orchestra.agents.llm import anthropic, openai_chat, openai_responses
from orchestra.agents.llm.effort import EFFORTS
from orchestra.agents.llm.types import (
    AssistantMessage,
    Conversation,
    HistoryItem,
    LLMResponse,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)

SHELL = ToolSpec(
    "buzz_dev_mcp__shell",
    "run bash",
    {
        "type": "object",
        "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
        "required": ["command"],
    },
)
READ = ToolSpec(
    "buzz_dev_mcp__read_file",
    "read a file",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def _parse(route: str, model: ChatCompletion | Response | Message) -> LLMResponse:
    data = model.model_dump(mode="json", exclude_unset=True)
    if route == "chat":
        return openai_chat.parse_response(data)
    if route == "responses":
        return openai_responses.parse_response(data)
    return anthropic.parse_response(data)


def _turns(route: str) -> dict[str, AssistantMessage]:
    """Every kind of assistant turn the route's replies produce, as the loop keeps them."""
    build = {"chat": chat_reply, "responses": responses_reply, "anthropic": anthropic_reply}[route]
    return {kind: _parse(route, build(kind)).message for kind in _KINDS[route]}


_COMMON = ("text", "tool_call", "parallel_tool_calls", "text_and_tool_call", "invalid_arguments")
_KINDS = {
    "chat": (*_COMMON, "empty", "refusal", "reasoning_content"),
    "responses": (*_COMMON, "empty", "refusal", "reasoning"),
    "anthropic": (*_COMMON, "thinking", "redacted_thinking", "pause_turn"),
}


def _history(turn: AssistantMessage) -> list[HistoryItem]:
    """A prompt, the turn, a result for each of its calls (one an error), a continuation, and a
    second prompt: every item kind the loop puts into a history."""
    history: list[HistoryItem] = [UserMessage("[Context]\nplease work"), turn]
    history.extend(
        ToolResult(call.id, f"result of {call.id}", is_error=index == 1)
        for index, call in enumerate(turn.tool_calls)
    )
    history.append(UserMessage("Your previous response was cut off.", starts_turn=False))
    history.append(UserMessage("next prompt"))
    return history


def _conversation(history: list[HistoryItem], tools: bool, effort: str | None) -> Conversation:
    return Conversation(
        model="some-model",
        system="You are a helpful assistant.",
        history=history,
        tools=[SHELL, READ] if tools else [],
        max_output_tokens=40000,
        effort=effort,
    )


def _build(route: str, conv: Conversation, option: str) -> dict[str, Any]:
    if route == "chat":
        return openai_chat.build_body(conv, option)
    if route == "responses":
        return openai_responses.build_body(conv)
    return anthropic.build_body(conv, option, caching=True)  # type: ignore[arg-type]


_OPTIONS = {
    "chat": ("max_completion_tokens", "max_tokens"),
    "responses": ("-",),
    "anthropic": ("budget", "adaptive"),
}
_EFFORTS = {
    "chat": (None, *EFFORTS),
    "responses": (None, *EFFORTS),
    "anthropic": (None, "low", "medium", "high", "xhigh", "max"),
}


@pytest.mark.parametrize("route", ["chat", "responses", "anthropic"])
def test_every_request_body_is_a_valid_sdk_request(route: str) -> None:
    turns = _turns(route)
    bodies = 0
    for kind, turn in turns.items():
        history = _history(turn)
        for tools, effort, option in itertools.product(
            (True, False), _EFFORTS[route], _OPTIONS[route]
        ):
            body = _build(route, _conversation(history, tools, effort), option)
            try:
                validate_request(route, body)
            except ValidationError as error:
                raise AssertionError(
                    f"{route} replay of a {kind!r} turn, tools={tools}, effort={effort}, "
                    f"{option}: {error}"
                ) from None
            bodies += 1
    assert bodies == len(turns) * 2 * len(_EFFORTS[route]) * len(_OPTIONS[route])


@pytest.mark.parametrize("route", ["chat", "responses", "anthropic"])
def test_the_check_rejects_an_unknown_key_deep_in_the_history(route: str) -> None:
    """The validation is real: a stray key inside one replayed message fails it."""
    body = _build(route, _conversation(_history(_turns(route)["text"]), True, None), "max_tokens")
    key = {"chat": "messages", "responses": "input", "anthropic": "messages"}[route]
    body[key][-1]["unexpected"] = 1
    with pytest.raises(ValidationError):
        validate_request(route, body)


def test_responses_tools_carry_strict_and_text_replays_as_an_input_message() -> None:
    body = openai_responses.build_body(
        _conversation(_history(_turns("responses")["text"]), True, None)
    )
    assert all(tool["strict"] is False for tool in body["tools"])
    assistant = [i for i in body["input"] if i.get("role") == "assistant"]
    assert assistant == [{"type": "message", "role": "assistant", "content": "Done."}]


@pytest.mark.parametrize("route", ["chat", "responses", "anthropic"])
def test_invalid_tool_arguments_are_replayed_as_an_empty_object(route: str) -> None:
    turn = _turns(route)["invalid_arguments"]
    if route != "anthropic":  # Anthropic's `input` is always an object
        assert turn.tool_calls[0].arguments == '{"command": "ls'  # as the model wrote it
    body = _build(route, _conversation(_history(turn), True, None), "max_tokens")
    if route == "chat":
        sent = body["messages"][2]["tool_calls"][0]["function"]["arguments"]
    elif route == "responses":
        sent = next(i for i in body["input"] if i["type"] == "function_call")["arguments"]
    else:
        sent = body["messages"][1]["content"][-1]["input"]
    assert sent in ("{}", {})


def test_refusals_end_the_turn_as_refusal_and_keep_their_text() -> None:
    for route in ("chat", "responses"):
        build = chat_reply if route == "chat" else responses_reply
        parsed = _parse(route, build("refusal"))
        assert parsed.outcome == "refusal"
        assert parsed.message.said == "I can't help with that."
    chat_body = openai_chat.build_body(
        _conversation(_history(_turns("chat")["refusal"]), False, None), "max_tokens"
    )
    assert chat_body["messages"][2] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }


def test_anthropic_cache_writes_are_counted_apart_from_reads() -> None:
    usage = _parse("anthropic", anthropic_reply("text")).usage
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_write_tokens) == (
        50 + 30 + 20,
        30,
        20,
    )


def test_thinking_blocks_are_replayed_byte_identical() -> None:
    for kind in ("thinking", "redacted_thinking"):
        turn = _turns("anthropic")[kind]
        body = anthropic.build_body(
            _conversation(_history(turn), True, "high"), "budget", caching=True
        )
        assert body["messages"][1]["content"][0] == turn.replay[0]
    reasoning = _turns("responses")["reasoning"]
    body = openai_responses.build_body(_conversation(_history(reasoning), True, "high"))
    assert body["input"][1] == reasoning.replay[0]


def test_tool_calls_parsed_from_sdk_replies_keep_ids_and_arguments() -> None:
    for route in ("chat", "responses", "anthropic"):
        calls = _turns(route)["parallel_tool_calls"].tool_calls
        assert [(c.id, c.name) for c in calls] == [
            ("call_a", SHELL.name),
            ("call_b", READ.name),
        ], route
        assert ToolCall.parsed_arguments(calls[1]) == {"path": "a.txt"}
