"""Replies of every kind, built with the providers' SDK response models (wire_sdk.py says why).

`chat_reply(kind)`, `responses_reply(kind)` and `anthropic_reply(kind)` return the SDK model;
`wire_sdk.sdk_reply(model)` turns one into a reply of the fake server.
"""

from __future__ import annotations

import json
from typing import Any

from anthropic.types import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from anthropic.types import Usage as AnthropicUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)
from openai.types.completion_usage import (
    CompletionTokensDetails,
    CompletionUsage,
    PromptTokensDetails,
)
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseUsage,
)
from openai.types.responses.response_reasoning_item import Summary
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

SHELL = "buzz_dev_mcp__shell"
READ = "buzz_dev_mcp__read_file"
INVALID_ARGUMENTS = '{"command": "ls'
REFUSAL = "I can't help with that."
#: (id, name, arguments) of the calls each kind of turn makes.
CALLS: dict[str, list[tuple[str, str, str]]] = {
    "tool_call": [("call_a", SHELL, json.dumps({"command": "echo hi"}))],
    "parallel_tool_calls": [
        ("call_a", SHELL, json.dumps({"command": "echo hi"})),
        ("call_b", READ, json.dumps({"path": "a.txt"})),
    ],
    "text_and_tool_call": [("call_a", SHELL, json.dumps({"command": "true"}))],
    "invalid_arguments": [("call_a", SHELL, INVALID_ARGUMENTS)],
}
_TEXT = {"text": "Done.", "text_and_tool_call": "Let me look."}


# ---- OpenAI Chat Completions ----------------------------------------------------------------


def chat_reply(kind: str, *, model: str = "some-model") -> ChatCompletion:
    calls = [
        ChatCompletionMessageFunctionToolCall(
            id=cid, type="function", function=Function(name=name, arguments=arguments)
        )
        for cid, name, arguments in CALLS.get(kind, [])
    ]
    extra: dict[str, Any] = {}
    if kind == "reasoning_content":  # vLLM / DeepSeek-style servers add this field
        extra["reasoning_content"] = "thinking it over"
    message = ChatCompletionMessage(
        role="assistant",
        content=_TEXT.get(kind, "Done." if kind == "reasoning_content" else None),
        refusal=REFUSAL if kind == "refusal" else None,
        tool_calls=calls or None,
        **extra,
    )
    return ChatCompletion(
        id="chatcmpl-1",
        object="chat.completion",
        created=1700000000,
        model=model,
        choices=[Choice(index=0, message=message, finish_reason="tool_calls" if calls else "stop")],
        usage=CompletionUsage(
            prompt_tokens=100,
            completion_tokens=10,
            total_tokens=110,
            prompt_tokens_details=PromptTokensDetails(cached_tokens=40),
            completion_tokens_details=CompletionTokensDetails(reasoning_tokens=3),
        ),
    )


# ---- OpenAI Responses -----------------------------------------------------------------------


def responses_reply(kind: str, *, model: str = "some-model") -> Response:
    output: list[Any] = []
    if kind == "reasoning":
        output.append(
            ResponseReasoningItem(
                id="rs_1",
                type="reasoning",
                summary=[Summary(type="summary_text", text="thinking it over")],
                encrypted_content="opaque-blob",
            )
        )
    text = _TEXT.get(kind, "Done." if kind == "reasoning" else None)
    if text is not None or kind == "refusal":
        part: Any = (
            ResponseOutputRefusal(type="refusal", refusal=REFUSAL)
            if kind == "refusal"
            else ResponseOutputText(type="output_text", text=text or "", annotations=[])
        )
        output.append(
            ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed", content=[part]
            )
        )
    output.extend(
        ResponseFunctionToolCall(
            type="function_call", id=f"fc_{cid}", call_id=cid, name=name, arguments=arguments
        )
        for cid, name, arguments in CALLS.get(kind, [])
    )
    return Response(
        id="resp_1",
        object="response",
        created_at=1700000000,
        model=model,
        status="completed",
        output=output,
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
        usage=ResponseUsage(
            input_tokens=80,
            output_tokens=12,
            total_tokens=92,
            input_tokens_details=InputTokensDetails(cached_tokens=16, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=5),
        ),
    )


# ---- Anthropic Messages ---------------------------------------------------------------------


def anthropic_reply(kind: str, *, model: str = "some-model") -> Message:
    content: list[Any] = []
    if kind == "thinking":
        content.append(ThinkingBlock(type="thinking", thinking="hmm", signature="sig-1"))
    if kind == "redacted_thinking":
        content.append(RedactedThinkingBlock(type="redacted_thinking", data="opaque"))
    text = _TEXT.get(kind)
    if kind in ("thinking", "redacted_thinking", "pause_turn"):
        text = "Done."
    if text is not None:
        content.append(TextBlock(type="text", text=text))
    for cid, name, arguments in CALLS.get(kind, []):
        try:
            tool_input = json.loads(arguments)
        except ValueError:  # Anthropic always sends an object; stand in for a cut-off call
            tool_input = {}
        content.append(ToolUseBlock(type="tool_use", id=cid, name=name, input=tool_input))
    stop = "tool_use" if kind in CALLS else "pause_turn" if kind == "pause_turn" else "end_turn"
    return Message(
        id="msg_1",
        type="message",
        role="assistant",
        model=model,
        content=content,
        stop_reason=stop,
        stop_sequence=None,
        usage=AnthropicUsage(
            input_tokens=50,
            output_tokens=10,
            cache_read_input_tokens=30,
            cache_creation_input_tokens=20,
        ),
    )
