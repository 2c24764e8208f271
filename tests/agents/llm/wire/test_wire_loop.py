"""Replies built with the SDKs' response models, served by the fake provider and driven through
the real agent loop (buzz-agent as a subprocess over ACP, with buzz-dev-mcp for tools): the
next request each reply leads to is a valid SDK request, and the turn ends as it should."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLM, Reply
from wire_cases import REFUSAL, anthropic_reply, chat_reply, responses_reply
from wire_sdk import sdk_reply, validate_request

from orchestra.agents.trajectory.sidefile import AgentLine, read_side_file

ROUTE_OF_PATH = {"/v1/chat/completions": "chat", "/v1/responses": "responses"}


def env_for(fake: FakeLLM, route: str) -> dict[str, str]:
    if route == "anthropic":
        return fake.anthropic_env(model="some-model")
    return fake.openai_env(model="some-model") | {"OPENAI_COMPAT_API": route}


def reply(route: str, kind: str) -> Reply:
    build = {"chat": chat_reply, "responses": responses_reply, "anthropic": anthropic_reply}
    return sdk_reply(build[route](kind))


def validated(fake: FakeLLM, route: str) -> list[Any]:
    """Every request the agent sent, each checked against the route's SDK request type."""
    for request in fake.requests:
        validate_request(route, request.body)
    return [request.body for request in fake.requests]


@pytest.mark.parametrize("route", ["chat", "responses", "anthropic"])
async def test_parallel_tool_calls_then_text(fake_llm, start_agent, route: str) -> None:
    fake_llm.script(reply(route, "parallel_tool_calls"), reply(route, "text"))
    async with start_agent(env_for(fake_llm, route)) as agent:
        (agent.cwd / "a.txt").write_text("contents of a\n")
        session = await agent.new_session()
        response = await agent.prompt(session, "please work")
        said = [u.content.text for u in agent.client.of_kind("agent_message_chunk")]
    assert response.stop_reason == "end_turn"
    assert said == ["Done."]
    _, second = validated(fake_llm, route)
    text = repr(second)
    assert "hi\\n[exit code: 0]" in text and "contents of a" in text
    if route == "anthropic":
        results = second["messages"][-1]["content"]
        assert [b["tool_use_id"] for b in results] == ["call_a", "call_b"]  # one user message


@pytest.mark.parametrize("route", ["chat", "responses"])
async def test_refusal_ends_the_turn_as_refusal(
    fake_llm, start_agent, tmp_path: Path, route: str
) -> None:
    fake_llm.script(reply(route, "refusal"), reply(route, "text"))
    side_file = tmp_path / "solo.trajectory.jsonl"
    env = env_for(fake_llm, route) | {"BUZZ_AGENT_TRAJECTORY_LOG": str(side_file)}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        refused = await agent.prompt(session, "do something bad")
        after = await agent.prompt(session, "something else")
        said = [u.content.text for u in agent.client.of_kind("agent_message_chunk")]
    assert (refused.stop_reason, after.stop_reason) == ("refusal", "end_turn")
    assert said == [REFUSAL, "Done."]
    _, second = validated(fake_llm, route)
    assert REFUSAL in repr(second)  # the refusal is part of the history the model sees
    # The trajectory keeps why the refused turn ended, not only the refusal's text.
    responses = [line for line in read_side_file(side_file).lines if isinstance(line, AgentLine)]
    assert [(line.text, line.stop_reason) for line in responses] == [
        (REFUSAL, "refusal"),
        ("Done.", None),
    ]


@pytest.mark.parametrize("route", ["chat", "responses"])
async def test_invalid_tool_arguments_are_answered_and_replayed_as_json(
    fake_llm, start_agent, route: str
) -> None:
    fake_llm.script(reply(route, "invalid_arguments"), reply(route, "text"))
    async with start_agent(env_for(fake_llm, route)) as agent:
        session = await agent.new_session()
        response = await agent.prompt(session, "go")
    assert response.stop_reason == "end_turn"
    _, second = validated(fake_llm, route)
    if route == "chat":
        call = second["messages"][2]["tool_calls"][0]["function"]
        result = second["messages"][3]["content"]
    else:
        call = next(i for i in second["input"] if i["type"] == "function_call")
        result = next(i for i in second["input"] if i["type"] == "function_call_output")["output"]
    assert call["arguments"] == "{}"
    assert result.startswith("ERROR: invalid JSON in tool arguments")


async def test_responses_reasoning_is_replayed_with_its_encrypted_content(
    fake_llm, start_agent
) -> None:
    fake_llm.script(reply("responses", "reasoning"), reply("responses", "text"))
    async with start_agent(
        env_for(fake_llm, "responses") | {"BUZZ_AGENT_THINKING_EFFORT": "high"}
    ) as agent:
        session = await agent.new_session(tools=False)
        await agent.prompt(session, "one")
        await agent.prompt(session, "two")
        thoughts = [u.content.text for u in agent.client.of_kind("agent_thought_chunk")]
    first, second = validated(fake_llm, "responses")
    assert first["reasoning"] == {"effort": "high", "summary": "auto"}
    replayed = second["input"][1]
    assert replayed["id"] == "rs_1" and replayed["encrypted_content"] == "opaque-blob"
    assert thoughts == ["thinking it over"]


@pytest.mark.parametrize("kind", ["thinking", "redacted_thinking"])
async def test_anthropic_thinking_is_replayed_byte_identical(fake_llm, start_agent, kind) -> None:
    fake_llm.script(sdk_reply(anthropic_reply(kind)), sdk_reply(anthropic_reply("text")))
    env = env_for(fake_llm, "anthropic") | {"BUZZ_AGENT_THINKING_EFFORT": "medium"}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        await agent.prompt(session, "one")
        await agent.prompt(session, "two")
    first, second = validated(fake_llm, "anthropic")
    served = anthropic_reply(kind).model_dump(mode="json", exclude_unset=True)["content"][0]
    assert second["messages"][1]["content"][0] == served
    assert first["thinking"]["type"] == "enabled"


async def test_anthropic_pause_turn_continues_and_cache_writes_are_reported(
    fake_llm, start_agent
) -> None:
    fake_llm.script(sdk_reply(anthropic_reply("pause_turn")), sdk_reply(anthropic_reply("text")))
    async with start_agent(env_for(fake_llm, "anthropic")) as agent:
        session = await agent.new_session(tools=False)
        response = await agent.prompt(session, "one")
    assert response.stop_reason == "end_turn"
    assert len(validated(fake_llm, "anthropic")) == 2
    turn = response.field_meta["buzz"]["usage"]["turn"]
    assert (turn["inputTokens"], turn["cachedTokens"], turn["cacheWriteTokens"]) == (200, 60, 40)
