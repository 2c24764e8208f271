"""The oracle's answer to one chat-completions request (orchestrator.md §4.5).

Pure: given the request and what the registration knows, decide the answer. I/O
(waiting for the task event, checking the `done` marker) happens in the server.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from typing import Any, Literal

from orchestra.agents.oracle.faults import FaultKind

SOLVE_ID_PREFIX = "oracle-solve-"
MAX_SOLVE_CALLS = 3
COMMAND_KEYS = ("command", "cmd", "script")
SHELL_TIMEOUT_MS = 280_000
SHELL_TIMEOUT_S = 280
MISSING_TOOL_NAME = "oracle_missing__tool"

Decision = Literal["tool_call", "final", "fault"]


@dataclass(frozen=True)
class ShellTool:
    name: str
    command_key: str
    timeout_key: str | None
    timeout_value: int | None


@dataclass(frozen=True)
class Answer:
    """A chat message to return, plus what the log says about it."""

    decision: Decision
    message: dict[str, Any]
    finish_reason: str
    reason: str | None = None
    tool_name: str | None = None
    command: str | None = None


def find_shell_tool(tools: Any) -> ShellTool | None:
    """The first function named `shell` or ending with `__shell`."""
    if not isinstance(tools, list):
        return None
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        name = function.get("name")
        if not isinstance(name, str) or not (name == "shell" or name.endswith("__shell")):
            continue
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        properties = properties if isinstance(properties, dict) else {}
        command_key = next(
            (
                key
                for key in COMMAND_KEYS
                if isinstance(properties.get(key), dict) and properties[key].get("type") == "string"
            ),
            "command",
        )
        timeout_key, timeout_value = None, None
        if "timeout_ms" in properties:
            timeout_key, timeout_value = "timeout_ms", SHELL_TIMEOUT_MS
        elif "timeout_secs" in properties:
            timeout_key, timeout_value = "timeout_secs", SHELL_TIMEOUT_S
        elif "timeout" in properties:
            timeout_key, timeout_value = "timeout", SHELL_TIMEOUT_S
        return ShellTool(name, command_key, timeout_key, timeout_value)
    return None


def count_solve_calls(messages: Any) -> int:
    """Solve calls already issued, counted from the request's own history."""
    if not isinstance(messages, list):
        return 0
    count = 0
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            call_id = call.get("id") if isinstance(call, dict) else None
            if isinstance(call_id, str) and call_id.startswith(SOLVE_ID_PREFIX):
                count += 1
    return count


def solve_command(
    *,
    channel_id: str,
    task_event_id: str,
    requester_pubkey: str,
    requester_name: str,
    solve_path: str,
) -> str:
    return (
        f"BUZZ_CHANNEL_ID={channel_id} BUZZ_REPLY_TO={task_event_id} "
        f"BUZZ_REQUESTER_PUBKEY={requester_pubkey} "
        f"BUZZ_REQUESTER_NAME={shlex.quote(requester_name)} bash {shlex.quote(solve_path)}"
    )


def final_answer(reason: str | None, content: str = "") -> Answer:
    return Answer("final", {"role": "assistant", "content": content}, "stop", reason=reason)


def tool_call_answer(
    decision: Decision, call_id: str, tool_name: str, arguments: str, *, command: str | None = None
) -> Answer:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": tool_name, "arguments": arguments},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return Answer(decision, message, "tool_calls", tool_name=tool_name, command=command)


def solve_answer(shell: ShellTool, agent_id: str, number: int, command: str) -> Answer:
    arguments: dict[str, Any] = {shell.command_key: command}
    if shell.timeout_key is not None:
        arguments[shell.timeout_key] = shell.timeout_value
    call_id = f"{SOLVE_ID_PREFIX}{agent_id}-{number}"
    return tool_call_answer(
        "tool_call", call_id, shell.name, json.dumps(arguments), command=command
    )


def fault_answer(kind: FaultKind, shell: ShellTool | None, agent_id: str, number: int) -> Answer:
    """Body faults (`malformed`, `unknown_tool`, `truncated`); HTTP faults are the server's."""
    call_id = f"oracle-fault-{agent_id}-{number}"
    if kind == "malformed":
        tool_name = shell.name if shell is not None else "shell"
        return tool_call_answer("fault", call_id, tool_name, '{"command": ')
    if kind == "unknown_tool":
        return tool_call_answer("fault", call_id, MISSING_TOOL_NAME, "{}")
    if kind == "truncated":
        return Answer("fault", {"role": "assistant", "content": "oracle: partial"}, "length")
    raise ValueError(f"fault {kind} has no message body")


def completion_body(
    answer: Answer, *, agent_id: str, number: int, created: int, model: Any, request_bytes: int
) -> dict[str, Any]:
    prompt_tokens = math.ceil(request_bytes / 4)
    completion_tokens = math.ceil(len(json.dumps(answer.message)) / 4)
    return {
        "id": f"chatcmpl-oracle-{agent_id}-{number}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": answer.message, "finish_reason": answer.finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def sse_body(body: dict[str, Any], include_usage: bool) -> bytes:
    """The same answer as Server-Sent Events: role, delta, finish, [usage], [DONE]."""
    choice = body["choices"][0]
    message = choice["message"]
    base = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    if message.get("tool_calls"):
        delta: dict[str, Any] = {
            "tool_calls": [call | {"index": i} for i, call in enumerate(message["tool_calls"])]
        }
    else:
        delta = {"content": message.get("content") or ""}
    chunks = [
        chunk({"role": "assistant"}, None),
        chunk(delta, None),
        chunk({}, choice["finish_reason"]),
    ]
    if include_usage:
        chunks.append(base | {"choices": [], "usage": body["usage"]})
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()
