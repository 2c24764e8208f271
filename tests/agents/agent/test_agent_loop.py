"""buzz-agent as a real subprocess, driven over ACP, against the fake provider server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from agent_support import RecordingClient, make_fifo, read_fifo, wait_for_exit
from fake_llm import (
    DEFAULT_KEY,
    Reply,
    chat_text,
    chat_tool_call,
    chat_tool_calls,
    error_reply,
    responses_message,
)

SHELL = "buzz_dev_mcp__shell"


def messages_of(request: Any) -> list[dict[str, Any]]:
    return request.body["messages"]


async def test_tool_call_reaches_dev_mcp_and_result_flows_back(fake_llm, start_agent) -> None:
    fake_llm.script(
        chat_tool_call(SHELL, {"command": "echo hello > out.txt; cat out.txt"}, call_id="call_a"),
        chat_text("done"),
    )
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session()
        response = await agent.prompt(session, "please work")
        assert (agent.cwd / "out.txt").read_text() == "hello\n"
    assert response.stop_reason == "end_turn"
    first, second = fake_llm.requests
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == f"Bearer {DEFAULT_KEY}"
    assert first.body["stream"] is False and first.body["tool_choice"] == "auto"
    assert messages_of(first)[-1] == {"role": "user", "content": "please work"}
    assert messages_of(second)[-2]["tool_calls"][0]["id"] == "call_a"
    assert messages_of(second)[-1] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "hello\n[exit code: 0]",
    }
    started = agent.client.of_kind("tool_call")[0]
    assert (started.tool_call_id, started.kind, started.status) == (
        "call_a",
        "execute",
        "in_progress",
    )
    assert started.title.startswith(f"{SHELL}: {{")
    finished = agent.client.of_kind("tool_call_update")[0]
    assert finished.status == "completed"
    assert finished.content[0].content.text == "hello\n[exit code: 0]"
    assert [u.content.text for u in agent.client.of_kind("agent_message_chunk")] == ["done"]
    assert len(agent.client.permission_requests) == 1


async def test_usage_is_reported_after_each_call_and_totalled_in_the_response(
    fake_llm, start_agent
) -> None:
    fake_llm.script(chat_tool_call(SHELL, {"command": "true"}), chat_text("ok"))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session()
        response = await agent.prompt(session, "go")
        usages = agent.client.usage_notifications()
    assert [u["sessionId"] for u in usages] == [session, session]
    assert usages[0]["usage"] == {
        "inputTokens": 100,
        "outputTokens": 10,
        "cachedTokens": 40,
        "reasoningTokens": 3,
        "cacheWriteTokens": 0,
        "llmCalls": 1,
        "model": "fake-model",
    }
    assert usages[1]["usage"]["inputTokens"] == 200 and usages[1]["usage"]["llmCalls"] == 2
    totals = response.field_meta["buzz"]["usage"]
    assert totals["turn"] == totals["session"]
    assert totals["turn"]["outputTokens"] == 20 and totals["turn"]["cachedTokens"] == 80


async def test_429_retry_waits_for_retry_after(fake_llm, start_agent) -> None:
    fake_llm.script(error_reply(429, "slow down", retry_after="1"), chat_text("fine"))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False)
        response = await agent.prompt(session, "hi")
    assert response.stop_reason == "end_turn"
    first, second = fake_llm.requests
    assert second.received_at - first.received_at >= 1.0
    assert first.body == second.body  # the same request is retried
    assert "llm retry 1/5: HTTP 429; waiting" in agent.stderr_text()


async def test_server_errors_are_retried_with_backoff(fake_llm, start_agent) -> None:
    fake_llm.script(error_reply(500), error_reply(502), chat_text("recovered"))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False)
        response = await agent.prompt(session, "hi")
    assert response.stop_reason == "end_turn"
    times = [r.received_at for r in fake_llm.requests]
    assert len(times) == 3
    assert times[1] - times[0] >= 0.75 and times[2] - times[1] >= 1.5  # jitter is ±25 %


async def test_stalled_response_hits_the_llm_timeout_and_is_retried(fake_llm, start_agent) -> None:
    fake_llm.script(Reply(body=chat_text("too late").body, delay=30), chat_text("recovered"))
    env = fake_llm.openai_env() | {"BUZZ_AGENT_LLM_TIMEOUT_SECS": "1"}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        response = await agent.prompt(session, "hi")
    assert response.stop_reason == "end_turn"
    times = [r.received_at for r in fake_llm.requests]
    assert len(times) == 2
    assert times[1] - times[0] >= 1.0  # the first call was abandoned at the 1 s timeout
    said = repr(agent.client.of_kind("agent_message_chunk"))
    assert "recovered" in said and "too late" not in said


async def test_exhausted_retries_fail_retryably_and_roll_the_prompt_back(
    fake_llm, start_agent
) -> None:
    fake_llm.script(error_reply(503), error_reply(503), chat_text("second prompt answer"))
    env = fake_llm.openai_env() | {"BUZZ_AGENT_LLM_MAX_RETRIES": "1"}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        with pytest.raises(RequestError) as failure:
            await agent.prompt(session, "first prompt")
        await agent.prompt(session, "second prompt")
    assert failure.value.code == -32603
    assert failure.value.data["kind"] == "llm_http_error"
    assert failure.value.data["status"] == 503
    assert failure.value.data["retryable"] is True
    last = messages_of(fake_llm.requests[-1])
    assert [m["content"] for m in last if m["role"] == "user"] == ["second prompt"]


async def test_401_fails_at_once_without_retry(fake_llm, start_agent) -> None:
    fake_llm.script(error_reply(401, "unknown token"))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False)
        with pytest.raises(RequestError) as failure:
            await agent.prompt(session, "hi")
    assert failure.value.data["retryable"] is False
    assert failure.value.data["status"] == 401
    assert "unknown token" in failure.value.data["detail"]
    assert len(fake_llm.requests) == 1


async def test_max_rounds_stops_the_loop(fake_llm, start_agent) -> None:
    fake_llm.script(
        *(
            chat_tool_call(SHELL, {"command": "echo x >> rounds.txt"}, call_id=f"call_{n}")
            for n in range(5)
        )
    )
    env = fake_llm.openai_env() | {"BUZZ_AGENT_MAX_ROUNDS": "2"}
    async with start_agent(env) as agent:
        session = await agent.new_session()
        response = await agent.prompt(session, "loop forever")
        assert (agent.cwd / "rounds.txt").read_text() == "x\nx\n"
    assert response.stop_reason == "max_turn_requests"
    assert len(fake_llm.requests) == 2


async def test_truncation_is_continued_and_invalid_partial_calls_dropped(
    fake_llm, start_agent
) -> None:
    fake_llm.script(
        chat_tool_calls(
            [
                ("call_ok", SHELL, {"command": "echo kept"}),
                ("call_cut", SHELL, '{"command": "echo cu'),
            ],
            finish="length",
            text="partial",
        ),
        chat_text("finished"),
    )
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session()
        response = await agent.prompt(session, "write a lot")
    assert response.stop_reason == "end_turn"
    messages = messages_of(fake_llm.requests[1])
    assistant, tool_result, continuation = messages[-3:]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_ok"]
    assert assistant["content"] == "partial"
    assert tool_result["content"] == "kept\n[exit code: 0]"
    assert continuation == {
        "role": "user",
        "content": "Your previous response was cut off at the output limit. Continue from "
        "where it stopped, and keep individual tool calls small.",
    }


async def test_repeated_truncation_stops_with_max_tokens(fake_llm, start_agent) -> None:
    fake_llm.script(*(chat_text("more", finish="length") for _ in range(3)))
    env = fake_llm.openai_env() | {"BUZZ_AGENT_MAX_TOKEN_RECOVERIES": "1"}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        response = await agent.prompt(session, "hi")
    assert response.stop_reason == "max_tokens"
    assert len(fake_llm.requests) == 2


async def test_malformed_arguments_and_unknown_tools_become_error_results(
    fake_llm, start_agent
) -> None:
    fake_llm.script(
        chat_tool_calls(
            [("bad_json", SHELL, '{"command": '), ("missing", "oracle_missing__tool", {})]
        ),
        chat_text(""),
    )
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session()
        response = await agent.prompt(session, "hi")
    assert response.stop_reason == "end_turn"
    bad, missing = messages_of(fake_llm.requests[1])[-2:]
    assert bad["content"].startswith("ERROR: invalid JSON in tool arguments: ")
    assert missing["content"] == (
        'ERROR: unknown tool "oracle_missing__tool"; available: buzz_dev_mcp__shell, '
        "buzz_dev_mcp__read_file, buzz_dev_mcp__str_replace, buzz_dev_mcp__todo"
    )
    assert [u.status for u in agent.client.of_kind("tool_call_update")] == ["failed", "failed"]
    assert agent.client.permission_requests == []  # nothing runnable was asked about


async def test_refused_permission_does_not_run_the_tool(fake_llm, start_agent) -> None:
    fake_llm.script(chat_tool_call(SHELL, {"command": "touch ran.txt"}), chat_text(""))
    async with start_agent(
        fake_llm.openai_env(), client=RecordingClient(permission_choice=None)
    ) as agent:
        session = await agent.new_session()
        await agent.prompt(session, "hi")
        assert not (agent.cwd / "ran.txt").exists()
    assert messages_of(fake_llm.requests[1])[-1]["content"] == "ERROR: tool call was not permitted"


async def test_secrets_stay_out_of_logs_and_tools(fake_llm, start_agent) -> None:
    fake_llm.script(
        chat_tool_call(SHELL, {"command": 'echo "key=${OPENAI_COMPAT_API_KEY:-none}"'}),
        error_reply(500),
        chat_text("bye"),
    )
    env = fake_llm.openai_env() | {"BUZZ_AGENT_LOG_LEVEL": "debug"}
    async with start_agent(env) as agent:
        session = await agent.new_session()
        await agent.prompt(session, "hi")
    assert messages_of(fake_llm.requests[1])[-1]["content"] == "key=none\n[exit code: 0]"
    log = agent.stderr_text()
    assert "llm request body" in log  # debug logging was on
    assert DEFAULT_KEY not in log
    assert "\x1b[" not in log


async def test_cancel_during_llm_call_returns_cancelled(fake_llm, start_agent) -> None:
    fake_llm.script(Reply(body=chat_text("late").body, delay=20), chat_text("after cancel"))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False)
        prompt = asyncio.create_task(agent.prompt(session, "first"))
        await asyncio.to_thread(fake_llm.wait_for_requests, 1)
        await agent.conn.cancel(session_id=session)
        response = await asyncio.wait_for(prompt, 10)
        assert response.stop_reason == "cancelled"
        follow_up = await agent.prompt(session, "second")
    assert follow_up.stop_reason == "end_turn"
    users = [m["content"] for m in messages_of(fake_llm.requests[-1]) if m["role"] == "user"]
    assert users == ["first", "second"]


async def test_cancel_during_shell_kills_the_command(fake_llm, start_agent, tmp_path: Path) -> None:
    fifo = make_fifo(tmp_path / "sleep.pid")
    fake_llm.script(chat_tool_call(SHELL, {"command": f"sleep 300 & echo $! > {fifo}; wait"}))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session()
        prompt = asyncio.create_task(agent.prompt(session, "run"))
        pid = int(await read_fifo(fifo))
        await agent.conn.cancel(session_id=session)
        response = await asyncio.wait_for(prompt, 10)
        assert response.stop_reason == "cancelled"
        await wait_for_exit(pid)


async def test_heartbeats_are_sent_while_a_turn_runs(fake_llm, start_agent) -> None:
    fake_llm.script(Reply(body=chat_text("slow answer").body, delay=1.2))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False, heartbeat_secs=0.3)
        await agent.prompt(session, "hi")
        beats = [p for m, p in agent.client.extensions if m == "buzz/heartbeat"]
    assert len(beats) >= 2
    assert all(beat == {"sessionId": session} for beat in beats)


async def test_system_prompt_from_session_meta_and_rejected_effort_downgrade(
    fake_llm, start_agent
) -> None:
    fake_llm.script(
        error_reply(
            400, "Unsupported value: 'reasoning_effort' does not support 'xhigh' with this model."
        ),
        chat_text("ok"),
    )
    env = fake_llm.openai_env() | {
        "BUZZ_AGENT_THINKING_EFFORT": "xhigh",
        "BUZZ_AGENT_NO_HINTS": "1",
    }
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False, system_prompt="[Base]\nbe brief")
        response = await agent.prompt(session, "hi")
        usage = agent.client.usage_notifications()[-1]["usage"]
    assert response.stop_reason == "end_turn"
    first, second = fake_llm.requests
    assert first.body["reasoning_effort"] == "xhigh"
    assert second.body["reasoning_effort"] == "high"
    assert messages_of(second)[0] == {"role": "system", "content": "[Base]\nbe brief"}
    assert "tools" not in second.body
    assert usage["effectiveEffort"] == "high"


async def test_initialize_advertises_buzz_capabilities(fake_llm, start_agent) -> None:
    from acp import PROTOCOL_VERSION

    async with start_agent(fake_llm.openai_env()) as agent:
        init = await agent.conn.initialize(protocol_version=PROTOCOL_VERSION + 5)
    assert init.protocol_version == PROTOCOL_VERSION
    assert init.agent_info.name == "buzz-agent"
    assert init.field_meta == {"buzz": {"systemPrompt": True, "heartbeat": True}}
    assert init.agent_capabilities.load_session is False


async def test_configuration_error_exits_before_initialize(tmp_path: Path) -> None:
    from agent_support import BUZZ_AGENT, agent_environment

    for env, message in [
        ({"BUZZ_AGENT_PROVIDER": "databricks"}, "unsupported provider 'databricks'"),
        (
            {"BUZZ_AGENT_PROVIDER": "anthropic", "BUZZ_AGENT_MODEL": "m"},
            "ANTHROPIC_API_KEY is required",
        ),
        (
            {
                "BUZZ_AGENT_PROVIDER": "openai",
                "BUZZ_AGENT_MODEL": "m",
                "OPENAI_COMPAT_BASE_URL": "http://127.0.0.1:9/v1",
                "BUZZ_AGENT_NO_HINTS": "maybe",
            },
            "BUZZ_AGENT_NO_HINTS: expected a boolean",
        ),
        (
            {
                "BUZZ_AGENT_PROVIDER": "openai",
                "BUZZ_AGENT_MODEL": "m",
                "OPENAI_COMPAT_BASE_URL": "http://127.0.0.1:9/v1",
                "BUZZ_AGENT_TRAJECTORY_LOG": str(tmp_path / "missing" / "a.trajectory.jsonl"),
            },
            f"BUZZ_AGENT_TRAJECTORY_LOG: cannot open {tmp_path}/missing/a.trajectory.jsonl: "
            "No such file or directory",
        ),
    ]:
        process = await asyncio.create_subprocess_exec(
            BUZZ_AGENT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=agent_environment(env),
            cwd=tmp_path,
        )
        request = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": 1},
        }
        stdout, stderr = await process.communicate(json.dumps(request).encode() + b"\n")
        assert process.returncode == 1
        assert stdout == b""
        assert message in stderr.decode() and "Traceback" not in stderr.decode()


async def test_tool_timeout_and_oversized_results(fake_llm, start_agent) -> None:
    fake_llm.script(
        chat_tool_calls(
            [
                ("slow", SHELL, {"command": "sleep 30"}),
                ("big", SHELL, {"command": "head -c 6000 /dev/zero | tr '\\0' a"}),
            ]
        ),
        chat_text(""),
    )
    env = fake_llm.openai_env() | {
        "BUZZ_AGENT_TOOL_TIMEOUT_SECS": "1",
        "BUZZ_AGENT_MAX_TOOL_RESULT_TEXT_BYTES": "2048",
    }
    async with start_agent(env) as agent:
        session = await agent.new_session()
        await agent.prompt(session, "hi")
    slow, big = messages_of(fake_llm.requests[1])[-2:]
    assert slow["content"] == "ERROR: tool timed out after 1 s"
    assert big["content"].startswith("a" * 1024 + "\n[… ")
    assert big["content"].endswith("a" * 1009 + "\n[exit code: 0]")


async def test_dead_tool_server_is_restarted_once(fake_llm, start_agent) -> None:
    fake_llm.script(
        chat_tool_call(SHELL, {"command": "kill -9 $PPID"}, call_id="kill"),
        chat_tool_call(SHELL, {"command": "echo alive"}, call_id="again"),
        chat_text(""),
    )
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session()
        response = await agent.prompt(session, "hi")
    assert response.stop_reason == "end_turn"
    killed = messages_of(fake_llm.requests[1])[-1]
    assert killed["content"] == "ERROR: tool server restarted; call the tool again"
    assert messages_of(fake_llm.requests[2])[-1]["content"] == "alive\n[exit code: 0]"


async def test_context_overflow_is_retried_once_after_trimming(fake_llm, start_agent) -> None:
    overflow = "This model's maximum context length is 8192 tokens."
    fake_llm.script(chat_text("first"), error_reply(400, overflow), chat_text("fits now"))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False)
        await agent.prompt(session, "one")
        second = await agent.prompt(session, "two")
    assert second.stop_reason == "end_turn"
    rejected, retried = fake_llm.requests[1].body, fake_llm.requests[2].body
    assert len(retried["messages"]) < len(rejected["messages"])  # the earlier turn was dropped


async def test_responses_route(fake_llm, start_agent) -> None:
    fake_llm.script(
        responses_message(
            [
                {"type": "reasoning", "id": "rs_1", "encrypted_content": "e", "summary": []},
                {"type": "message", "content": [{"type": "output_text", "text": "hello"}]},
            ]
        )
    )
    env = fake_llm.openai_env() | {"OPENAI_COMPAT_API": "responses"}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        first = await agent.prompt(session, "one")
        await agent.prompt(session, "two")
    assert first.stop_reason == "end_turn"
    request = fake_llm.requests[1]
    assert request.path == "/v1/responses"
    assert request.body["input"][1]["type"] == "reasoning"  # replayed with encrypted content
    assert request.body["input"][2] == {"type": "message", "role": "assistant", "content": "hello"}


async def test_unstartable_mcp_server_fails_session_new(fake_llm, start_agent) -> None:
    from acp import PROTOCOL_VERSION
    from acp.schema import McpServerStdio

    async with start_agent(fake_llm.openai_env()) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        broken = McpServerStdio(name="broken", command="/nonexistent/mcp", args=[], env=[])
        with pytest.raises(RequestError) as failure:
            await agent.conn.new_session(cwd=str(agent.cwd), mcp_servers=[broken])
    assert failure.value.data["kind"] == "mcp_error"
    assert "broken" in failure.value.data["detail"]
