"""Provider request shapes, response parsing, usage normalisation, effort mapping and retry
timing (agent-harness.md §2.5-§2.8, §2.11)."""

from __future__ import annotations

import email.utils
import ssl
import time

import httpx
import pytest
from fake_llm import (
    DEFAULT_KEY,
    anthropic_message,
    anthropic_tool_use,
    anthropic_usage,
    responses_message,
)

from orchestra.agents.llm import anthropic, openai_chat, openai_responses
from orchestra.agents.llm.client import LLMClient, ProviderSettings, parse_retry_after, retry_delay
from orchestra.agents.llm.effort import (
    anthropic_fields,
    chat_fields,
    lower_effort,
    responses_fields,
    validate_effort,
)
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.types import (
    AssistantMessage,
    Conversation,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)

SHELL = ToolSpec(
    "buzz_dev_mcp__shell",
    "run bash",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
CALL = ToolCall("call_1", SHELL.name, '{"command":"ls"}')


def conversation(effort: str | None = None, **overrides) -> Conversation:
    history = [
        UserMessage("[Context]\nhello"),
        AssistantMessage(
            text="",
            tool_calls=[CALL],
            replay=[{"type": "thinking", "thinking": "hmm", "signature": "sig"}],
        ),
        ToolResult("call_1", "a.txt\n[exit code: 0]"),
        UserMessage("continue please", starts_turn=False),
    ]
    fields = dict(
        model="m",
        system="sys",
        history=history,
        tools=[SHELL],
        max_output_tokens=4096,
        effort=effort,
    )
    fields.update(overrides)
    return Conversation(**fields)


def test_chat_request_shape() -> None:
    body = openai_chat.build_body(conversation("medium"), "max_completion_tokens")
    assert body == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "[Context]\nhello"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": SHELL.name, "arguments": '{"command":"ls"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\n[exit code: 0]"},
            {"role": "user", "content": "continue please"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": SHELL.name,
                    "description": "run bash",
                    "parameters": SHELL.input_schema,
                },
            }
        ],
        "tool_choice": "auto",
        "max_completion_tokens": 4096,
        "reasoning_effort": "medium",
        "stream": False,
    }
    bare = openai_chat.build_body(conversation(tools=[]), "max_tokens")
    assert "tools" not in bare and "tool_choice" not in bare and "reasoning_effort" not in bare
    assert bare["max_tokens"] == 4096


def test_chat_error_results_are_prefixed() -> None:
    history = [
        UserMessage("x"),
        AssistantMessage(tool_calls=[CALL]),
        ToolResult("call_1", "boom", is_error=True),
    ]
    body = openai_chat.build_body(conversation(history=history), "max_completion_tokens")
    assert body["messages"][-1]["content"] == "ERROR: boom"


def test_chat_response_parsing_and_usage() -> None:
    parsed = openai_chat.parse_response(
        {
            "choices": [
                {
                    "message": {
                        "content": None,
                        "reasoning_content": "thinking...",
                        "tool_calls": [
                            {
                                "id": "c9",
                                "type": "function",
                                "function": {"name": "t", "arguments": "{}"},
                            }
                        ],
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 120,
                "completion_tokens": 30,
                "prompt_tokens_details": {"cached_tokens": 100},
                "completion_tokens_details": {"reasoning_tokens": 12},
            },
        }
    )
    assert parsed.outcome == "tool_calls"  # tool calls run whatever finish_reason says
    assert parsed.message.tool_calls == [ToolCall("c9", "t", "{}")]
    assert parsed.thought == "thinking..."
    assert parsed.message.replay == []  # reasoning_content is never replayed
    assert parsed.usage.to_wire() == {
        "inputTokens": 120,
        "outputTokens": 30,
        "cachedTokens": 100,
        "reasoningTokens": 12,
        "cacheWriteTokens": 0,
        "llmCalls": 1,
    }
    assert (
        openai_chat.parse_response(
            {"choices": [{"message": {"content": "no"}, "finish_reason": "content_filter"}]}
        ).outcome
        == "refusal"
    )
    parts = {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert openai_chat.parse_response({"choices": [{"message": parts}]}).message.text == "ab"
    with pytest.raises(LLMError) as bad:
        openai_chat.parse_response({"choices": []})
    assert bad.value.kind == "llm_bad_response" and bad.value.retryable


def test_responses_request_and_parsing() -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": "enc",
        "summary": [{"type": "summary_text", "text": "plan"}],
    }
    history = [
        UserMessage("hi"),
        AssistantMessage(text="", tool_calls=[CALL], replay=[reasoning]),
        ToolResult("call_1", "out"),
    ]
    body = openai_responses.build_body(conversation("high", history=history))
    assert body["instructions"] == "sys"
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        reasoning,
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": SHELL.name,
            "arguments": '{"command":"ls"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "out"},
    ]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["tools"][0] == {
        "type": "function",
        "name": SHELL.name,
        "description": "run bash",
        "parameters": SHELL.input_schema,
        "strict": False,
    }
    parsed = openai_responses.parse_response(
        responses_message(
            [reasoning, {"type": "message", "content": [{"type": "output_text", "text": "ok"}]}],
            status="incomplete",
            incomplete_reason="max_output_tokens",
        ).body
    )
    assert parsed.outcome == "truncated"
    assert parsed.message.replay == [reasoning] and parsed.thought == "plan"
    assert parsed.usage.to_wire()["cachedTokens"] == 16
    assert parsed.usage.to_wire()["reasoningTokens"] == 5


def test_anthropic_request_shape_with_cache_breakpoints_and_thinking_replay() -> None:
    body = anthropic.build_body(conversation("medium"), "budget", caching=True)
    assert body["system"] == [
        {"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"] == [
        {
            "name": SHELL.name,
            "description": "run bash",
            "input_schema": SHELL.input_schema,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 3072}  # clamped
    user, assistant, results = body["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "[Context]\nhello"}]}
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "tool_use", "id": "call_1", "name": SHELL.name, "input": {"command": "ls"}},
    ]
    # Tool results and the continuation share one user message; the last block is cached.
    assert results["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "content": "a.txt\n[exit code: 0]",
            "is_error": False,
        },
        {"type": "text", "text": "continue please", "cache_control": {"type": "ephemeral"}},
    ]
    plain = anthropic.build_body(conversation(), "budget", caching=False)
    assert "thinking" not in plain and "cache_control" not in plain["system"][0]


def test_anthropic_response_parsing_and_usage_normalisation() -> None:
    reply = anthropic_tool_use(
        "t",
        {"a": 1},
        thinking="deep",
        usage=anthropic_usage(inp=50, out=10, cache_read=30, cache_write=20),
    )
    parsed = anthropic.parse_response(reply.body)
    assert parsed.outcome == "tool_calls"
    assert parsed.message.replay == [{"type": "thinking", "thinking": "deep", "signature": "sig-1"}]
    assert parsed.thought == "deep"
    assert parsed.usage.to_wire() == {
        "inputTokens": 100,
        "outputTokens": 10,
        "cachedTokens": 30,
        "reasoningTokens": 0,
        "cacheWriteTokens": 20,
        "llmCalls": 1,
    }
    outcomes = {
        reason: anthropic.parse_response(
            anthropic_message([{"type": "text", "text": "x"}], stop_reason=reason).body
        ).outcome
        for reason in (
            "end_turn",
            "stop_sequence",
            "max_tokens",
            "pause_turn",
            "refusal",
            "model_context_window_exceeded",
        )
    }
    assert outcomes == {
        "end_turn": "end_turn",
        "stop_sequence": "end_turn",
        "max_tokens": "truncated",
        "pause_turn": "pause",
        "refusal": "refusal",
        "model_context_window_exceeded": "context_exceeded",
    }


@pytest.mark.parametrize(
    ("effort", "chat", "anthropic_budget", "adaptive"),
    [
        (None, {}, {}, {}),
        (
            "low",
            {"reasoning_effort": "low"},
            {"thinking": {"type": "enabled", "budget_tokens": 1024}},
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}},
        ),
        (
            "medium",
            {"reasoning_effort": "medium"},
            {"thinking": {"type": "enabled", "budget_tokens": 8192}},
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}},
        ),
        (
            "xhigh",
            {"reasoning_effort": "xhigh"},
            {"thinking": {"type": "enabled", "budget_tokens": 32768}},
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"}},
        ),
    ],
)
def test_effort_mapping_table(effort, chat, anthropic_budget, adaptive) -> None:
    assert chat_fields(effort) == chat
    assert responses_fields(effort) == (
        {} if effort is None else {"reasoning": {"effort": effort, "summary": "auto"}}
    )
    assert anthropic_fields(effort, "budget", 65536) == anthropic_budget
    assert anthropic_fields(effort, "adaptive", 65536) == adaptive


def test_effort_validation_and_downgrade() -> None:
    validate_effort("minimal", "openai")
    with pytest.raises(ValueError, match="not supported by the anthropic provider"):
        validate_effort("none", "anthropic")
    with pytest.raises(ValueError, match="BUZZ_AGENT_THINKING_EFFORT"):
        validate_effort("huge", "openai")
    assert [lower_effort(e) for e in ("max", "xhigh", "high", "medium", "low", "minimal")] == [
        "xhigh",
        "high",
        "medium",
        "low",
        "minimal",
        None,
    ]
    assert anthropic_fields("high", "budget", 1500) == {}  # no room for 1024 budget tokens


def test_retry_delays_are_bounded_jittered_and_honour_retry_after() -> None:
    for attempt, base in [(1, 1), (2, 2), (3, 4), (6, 30), (9, 30)]:
        delays = [retry_delay(attempt, None) for _ in range(200)]
        assert base * 0.75 <= min(delays) and max(delays) <= base * 1.25
    assert retry_delay(1, 7.0) == 7.0
    assert retry_delay(1, 500.0) == 120.0


def test_retry_after_header_forms() -> None:
    assert parse_retry_after(httpx.Headers({"retry-after": "3"})) == 3.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500"})) == 1.5
    future = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= parse_retry_after(httpx.Headers({"retry-after": future})) <= 10
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers()) is None


def test_error_classification() -> None:
    assert LLMError("llm_http_error", "x", status=529).retryable
    assert not LLMError("llm_http_error", "x", status=403).retryable
    assert LLMError("llm_network_error", "reset").retryable
    overflow = LLMError("llm_http_error", "This model's maximum context length is 8192", status=400)
    assert overflow.is_context_overflow and not overflow.retryable


async def test_anthropic_route_end_to_end(fake_llm, start_agent) -> None:
    fake_llm.script(
        anthropic_tool_use("buzz_dev_mcp__shell", {"command": "echo hi"}, thinking="plan"),
        anthropic_message([{"type": "text", "text": "all set"}]),
    )
    env = fake_llm.anthropic_env() | {"BUZZ_AGENT_THINKING_EFFORT": "medium"}
    async with start_agent(env) as agent:
        session = await agent.new_session()
        response = await agent.prompt(session, "go")
        thoughts = [u.content.text for u in agent.client.of_kind("agent_thought_chunk")]
        usage = agent.client.usage_notifications()[-1]["usage"]
    assert response.stop_reason == "end_turn"
    first, second = fake_llm.requests
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == DEFAULT_KEY
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in first.headers
    assert first.body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assistant, results = second.body["messages"][-2:]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "plan", "signature": "sig-1"}
    assert results["content"][0]["content"] == "hi\n[exit code: 0]"
    assert results["content"][0]["is_error"] is False
    assert thoughts == ["plan"]
    assert usage["inputTokens"] == 200 and usage["cachedTokens"] == 60
    assert usage["cacheWriteTokens"] == 40 and usage["llmCalls"] == 2


@pytest.mark.parametrize(
    ("base_url", "verified"),
    [
        ("https://api.openai.com/v1", True),
        ("HTTPS://api.anthropic.com", True),
        ("http://127.0.0.1:9/v1", False),  # the oracle: plain http, TLS is never used
    ],
)
async def test_certificates_are_verified_wherever_tls_can_be_used(
    base_url: str, verified: bool
) -> None:
    settings = ProviderSettings("chat", base_url, DEFAULT_KEY, "m")
    client = LLMClient(settings, effort=None, timeout_secs=5, max_retries=0)
    context = client._http._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert (context.verify_mode == ssl.CERT_REQUIRED) is verified
    await client.aclose()
