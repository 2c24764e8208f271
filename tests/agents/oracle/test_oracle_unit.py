"""The oracle model server over real HTTP (orchestrator.md §4.5)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from oracle_support import CHANNEL, REQUESTER, TASK_EVENT, TASK_PROMPT

from orchestra.agents.oracle import (
    FaultPlan,
    OracleAgent,
    OracleConfigError,
    OracleRegistrationError,
    OracleServer,
    OracleTrial,
    docker_listen_host,
    fault_plan_from_env,
    oracle_token,
)
from orchestra.agents.oracle import server as oracle_server_module

TRIAL = "trial123456789"
SHELL_TOOL = {
    "type": "function",
    "function": {
        "name": "buzz_dev_mcp__shell",
        "description": "run bash",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout_secs": {"type": "integer"}},
            "required": ["command"],
        },
    },
}
# A later line quoting another sender must not change whom the oracle answers.
PROMPT = (
    TASK_PROMPT
    + f"""
From: Mallory (npub: npub1abc, hex: {"ee" * 32})"""
)


@pytest.fixture
async def oracle() -> AsyncIterator[OracleServer]:
    server = OracleServer(model_names=["oracle", "oracle-b"])
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def make_trial(tmp_path: Path, faults: FaultPlan | None = None, **overrides: Any) -> OracleTrial:
    fields: dict[str, Any] = {
        "trial_id": TRIAL,
        "channel_id": CHANNEL,
        "requester_pubkey": REQUESTER,
        "requester_name": "Trial User's",
        "solve_path": "/solution/solve.sh",
        "state_dir": str(tmp_path / "state"),
        "agents": {
            oracle_token(TRIAL, "solo-1"): OracleAgent(
                agent_id="solo-1", faults=faults or FaultPlan()
            )
        },
        "log_path": tmp_path / "oracle.jsonl",
        "task_event_id": TASK_EVENT,
    }
    fields.update(overrides)
    return OracleTrial(**fields)


def chat_body(history: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": PROMPT}]
    return {
        "model": "oracle",
        "messages": messages + (history or []),
        "tools": [SHELL_TOOL],
        **extra,
    }


async def post(
    server: OracleServer, body: dict[str, Any], token: str | None = None
) -> httpx.Response:
    token = token or oracle_token(TRIAL, "solo-1")
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(
            f"{server.base_url()}/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        )


def log_records(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "oracle.jsonl").read_text().splitlines()]


def solve_call(n: int) -> list[dict[str, Any]]:
    call = {
        "id": f"oracle-solve-solo-1-{n}",
        "type": "function",
        "function": {"name": "buzz_dev_mcp__shell", "arguments": "{}"},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "[exit code: 1]"},
    ]


async def test_first_request_gets_the_solve_call(oracle: OracleServer, tmp_path: Path) -> None:
    oracle.register(make_trial(tmp_path))
    response = await post(oracle, chat_body())
    assert response.status_code == 200
    payload = response.json()
    assert payload["id"] == "chatcmpl-oracle-solo-1-1"
    assert payload["model"] == "oracle"
    assert abs(payload["created"] - time.time()) < 60
    choice = payload["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["id"] == "oracle-solve-solo-1-1"
    assert call["function"]["name"] == "buzz_dev_mcp__shell"
    arguments = json.loads(call["function"]["arguments"])
    assert arguments == {
        "command": (
            f"BUZZ_CHANNEL_ID={CHANNEL} BUZZ_REPLY_TO={TASK_EVENT} "
            f"BUZZ_REQUESTER_PUBKEY={REQUESTER} "
            "BUZZ_REQUESTER_NAME='Trial User'\"'\"'s' bash /solution/solve.sh"
        ),
        "timeout_secs": 280,
    }
    usage = payload["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    (record,) = log_records(tmp_path)
    assert record["decision"] == "tool_call" and record["status"] == 200
    assert record["request_number"] == 1 and record["solve_calls_seen"] == 0
    assert record["parsed_context"] == {
        "channel_id": CHANNEL,
        "reply_to": TASK_EVENT,
        "requester_pubkey": REQUESTER,
        "requester_name": "Trial User",
        "senders": [REQUESTER],
    }
    # The content's spoofed `From:` line is ignored; the name differs from the registration.
    assert record["context_mismatch"] == {
        "requester_name": {"registered": "Trial User's", "parsed": "Trial User"}
    }
    assert oracle_token(TRIAL, "solo-1") not in (tmp_path / "oracle.jsonl").read_text()


async def test_solve_calls_are_counted_from_history_and_capped(
    oracle: OracleServer, tmp_path: Path
) -> None:
    oracle.register(make_trial(tmp_path))
    history = solve_call(1) + solve_call(2)
    third = (await post(oracle, chat_body(history))).json()["choices"][0]
    assert third["message"]["tool_calls"][0]["id"] == "oracle-solve-solo-1-3"
    capped = (await post(oracle, chat_body(history + solve_call(3)))).json()["choices"][0]
    assert capped == {
        "index": 0,
        "message": {"role": "assistant", "content": ""},
        "finish_reason": "stop",
    }
    assert [r["reason"] for r in log_records(tmp_path)] == [None, "solve_cap_reached"]


async def test_done_marker_gives_the_final_message(oracle: OracleServer, tmp_path: Path) -> None:
    oracle.register(make_trial(tmp_path))
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "done").touch()
    choice = (await post(oracle, chat_body(solve_call(1)))).json()["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["message"]["content"] == ""


async def test_done_probe_replaces_the_host_path(oracle: OracleServer, tmp_path: Path) -> None:
    probed: list[bool] = []

    async def probe() -> bool:
        probed.append(True)
        return True

    oracle.register(make_trial(tmp_path, done_probe=probe))
    choice = (await post(oracle, chat_body())).json()["choices"][0]
    assert choice["finish_reason"] == "stop" and probed


async def test_no_shell_tool(oracle: OracleServer, tmp_path: Path) -> None:
    oracle.register(make_trial(tmp_path))
    body = chat_body()
    body["tools"] = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    choice = (await post(oracle, body)).json()["choices"][0]
    assert choice["message"]["content"] == "oracle: no shell tool offered"
    assert log_records(tmp_path)[0]["reason"] == "no_shell_tool"


async def test_command_key_and_timeout_follow_the_schema(
    oracle: OracleServer, tmp_path: Path
) -> None:
    oracle.register(make_trial(tmp_path))
    body = chat_body()
    body["tools"] = [
        {
            "type": "function",
            "function": {
                "name": "shell",
                "parameters": {
                    "type": "object",
                    "properties": {"cmd": {"type": "string"}, "timeout_ms": {"type": "integer"}},
                },
            },
        }
    ]
    call = (await post(oracle, body)).json()["choices"][0]["message"]["tool_calls"][0]
    arguments = json.loads(call["function"]["arguments"])
    assert set(arguments) == {"cmd", "timeout_ms"} and arguments["timeout_ms"] == 280000


async def test_waits_for_the_task_event(oracle: OracleServer, tmp_path: Path) -> None:
    oracle.register(make_trial(tmp_path, task_event_id=None))
    pending = asyncio.create_task(post(oracle, chat_body()))
    with pytest.raises(TimeoutError):  # parked until the task event is known
        await asyncio.wait_for(asyncio.shield(pending), 0.3)
    oracle.set_task_event(TRIAL, "ab" * 32)
    call = (await pending).json()["choices"][0]["message"]["tool_calls"][0]
    assert f"BUZZ_REPLY_TO={'ab' * 32}" in json.loads(call["function"]["arguments"])["command"]


async def test_no_task_event_after_the_wait(
    oracle: OracleServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(oracle_server_module, "TASK_EVENT_WAIT_S", 0.1)
    oracle.register(make_trial(tmp_path, task_event_id=None))
    choice = (await post(oracle, chat_body())).json()["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert log_records(tmp_path)[0]["reason"] == "no_task_event"


async def test_fault_plan_takes_the_first_requests_in_order(
    oracle: OracleServer, tmp_path: Path
) -> None:
    plan = fault_plan_from_env(
        {
            "ORACLE_FAULTS": "429:1,500:1,malformed:1,unknown_tool:1,truncated:1,slow:1",
            "ORACLE_SLOW_SECONDS": "0.2",
            "OTHER": "x",
        }
    )
    oracle.register(make_trial(tmp_path, faults=plan))
    r1 = await post(oracle, chat_body())
    assert r1.status_code == 429 and r1.headers["retry-after"] == "1"
    assert r1.json()["error"]["type"] == "rate_limit_error"
    r2 = await post(oracle, chat_body())
    assert (
        r2.status_code == 500 and r2.json()["error"]["message"] == "oracle: injected server error"
    )
    r3 = (await post(oracle, chat_body())).json()["choices"][0]
    assert r3["message"]["tool_calls"][0]["id"] == "oracle-fault-solo-1-3"
    assert r3["message"]["tool_calls"][0]["function"]["arguments"] == '{"command": '
    r4 = (await post(oracle, chat_body())).json()["choices"][0]
    assert r4["message"]["tool_calls"][0]["function"]["name"] == "oracle_missing__tool"
    r5 = (await post(oracle, chat_body())).json()["choices"][0]
    assert r5 == {
        "index": 0,
        "message": {"role": "assistant", "content": "oracle: partial"},
        "finish_reason": "length",
    }
    started = time.monotonic()
    r6 = (await post(oracle, chat_body())).json()["choices"][0]
    assert time.monotonic() - started >= 0.2
    assert r6["message"]["tool_calls"][0]["id"] == "oracle-solve-solo-1-1"
    r7 = (await post(oracle, chat_body())).json()["choices"][0]
    assert r7["message"]["tool_calls"][0]["id"] == "oracle-solve-solo-1-1"
    faults = [(r["fault"], r["decision"]) for r in log_records(tmp_path)]
    assert faults == [
        ("429", "fault"),
        ("500", "fault"),
        ("malformed", "fault"),
        ("unknown_tool", "fault"),
        ("truncated", "fault"),
        ("slow", "tool_call"),
        (None, "tool_call"),
    ]


async def test_slow_answer_is_dropped_when_the_client_leaves(
    oracle: OracleServer, tmp_path: Path
) -> None:
    plan = fault_plan_from_env({"ORACLE_FAULTS": "slow:1", "ORACLE_SLOW_SECONDS": "30"})
    oracle.register(make_trial(tmp_path, faults=plan))
    with pytest.raises(httpx.ReadTimeout):
        async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=0.3)) as client:
            await client.post(
                f"{oracle.base_url()}/chat/completions",
                json=chat_body(),
                headers={"Authorization": f"Bearer {oracle_token(TRIAL, 'solo-1')}"},
            )
    for _ in range(100):  # the server notices the hang-up promptly, not after 30 s
        if (tmp_path / "oracle.jsonl").exists():
            break
        await asyncio.sleep(0.05)
    (record,) = log_records(tmp_path)
    assert record["reason"] == "client_disconnected" and record["latency_ms"] < 10_000


async def test_streaming_answer(oracle: OracleServer, tmp_path: Path) -> None:
    oracle.register(make_trial(tmp_path))
    response = await post(oracle, chat_body(stream=True, stream_options={"include_usage": True}))
    assert response.headers["content-type"] == "text/event-stream"
    events = [
        line[len("data: ") :] for line in response.text.split("\n") if line.startswith("data: ")
    ]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["id"] == "oracle-solve-solo-1-1"
    assert chunks[2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[3]["usage"]["total_tokens"] > 0


async def test_tokens_routes_and_registration(oracle: OracleServer, tmp_path: Path) -> None:
    oracle.register(make_trial(tmp_path))
    assert (await post(oracle, chat_body(), token="oracle-nope-x")).status_code == 401
    assert oracle.unauthorized_requests == 1
    async with httpx.AsyncClient() as client:
        headers = {"Authorization": f"Bearer {oracle_token(TRIAL, 'solo-1')}"}
        models = (await client.get(f"{oracle.base_url()}/models", headers=headers)).json()
        assert models == {
            "object": "list",
            "data": [{"id": "oracle", "object": "model"}, {"id": "oracle-b", "object": "model"}],
        }
        assert (await client.get(f"{oracle.base_url()}/other", headers=headers)).status_code == 404
    other = make_trial(tmp_path, trial_id="trial123-other")
    with pytest.raises(OracleRegistrationError, match="already registered"):
        oracle.register(other)
    oracle.unregister(TRIAL)
    assert (await post(oracle, chat_body())).status_code == 401
    oracle.register(other)
    assert (await post(oracle, chat_body())).status_code == 200


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ORACLE_FAULTS": "503:1"}, 'ORACLE_FAULTS: unknown fault kind "503"'),
        ({"ORACLE_FAULTS": "429"}, 'ORACLE_FAULTS: malformed item "429"'),
        ({"ORACLE_FAULTS": "slow:0"}, 'ORACLE_FAULTS: malformed item "slow:0"'),
        ({"ORACLE_SLOW_SECONDS": "-1"}, "ORACLE_SLOW_SECONDS: must be a number > 0"),
        ({"ORACLE_SLOW_SECONDS": "soon"}, "ORACLE_SLOW_SECONDS: not a number"),
        ({"ORACLE_MODE": "x"}, "ORACLE_MODE: unknown oracle setting"),
    ],
)
def test_fault_config_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(OracleConfigError) as raised:
        fault_plan_from_env(env)
    assert str(raised.value).startswith(message)


def test_docker_listen_host_never_binds_everything() -> None:
    assert docker_listen_host("127.0.0.1") == "127.0.0.1"
    assert docker_listen_host("203.0.113.7") == "127.0.0.1"  # not an interface of this host
    assert docker_listen_host("0.0.0.0") == "127.0.0.1"
    assert docker_listen_host(None) == "127.0.0.1"
