"""The oracle's answer to one chat-completions request (orchestrator.md §4.5).

Pure: given the request and what the registration knows, decide the answer. I/O
(waiting for the task event, checking the `done` marker) happens in the server.

Solo rosters follow §4.5: run the solution (`solve_step`), then answer. Team rosters follow
the team protocol (orchestrator.md §4.5 "Teams"): the lead delegates the task to its first worker by
an explicit mention, the worker runs the solution and calls the lead back, and the lead,
woken by that callback, posts `DONE: …`. Every post is a `buzz messages send` through the
shell tool, in the task's thread.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from typing import Any, Literal

from orchestra.agents.oracle.context import message_text
from orchestra.agents.oracle.faults import FaultKind
from orchestra.agents.oracle.registry import OracleTeammate

SOLVE_ID_PREFIX = "oracle-solve-"
DELEGATE_ID_PREFIX = "oracle-delegate-"
CALLBACK_ID_PREFIX = "oracle-callback-"
DONE_ID_PREFIX = "oracle-done-"
MAX_SOLVE_CALLS = 3
MAX_POST_CALLS = 3
SHELL_SUCCESS = "[exit code: 0]"
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
    return len(_call_ids(messages if isinstance(messages, list) else [], SOLVE_ID_PREFIX))


def _call_ids(messages: list[Any], prefix: str) -> list[str]:
    """The ids of the assistant tool calls in `messages` that start with `prefix`."""
    ids = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            call_id = call.get("id") if isinstance(call, dict) else None
            if isinstance(call_id, str) and call_id.startswith(prefix):
                ids.append(call_id)
    return ids


def _current_turn(messages: Any) -> list[Any]:
    """The messages after the turn's user message (the last one carrying `[Context]`)."""
    if not isinstance(messages, list):
        return []
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "user":
            if "[Context]" in message_text(message.get("content")):
                return messages[index + 1 :]
    return list(messages)


def turn_posts(messages: Any, prefix: str) -> tuple[int, bool]:
    """This turn's calls whose id starts with `prefix`, and whether one of them exited 0."""
    turn = _current_turn(messages)
    ids = _call_ids(turn, prefix)
    succeeded = any(
        isinstance(message, dict)
        and message.get("role") == "tool"
        and message.get("tool_call_id") in ids
        and message_text(message.get("content")).rstrip().endswith(SHELL_SUCCESS)
        for message in turn
    )
    return len(ids), succeeded


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


def shell_call_answer(shell: ShellTool, call_id: str, command: str) -> Answer:
    arguments: dict[str, Any] = {shell.command_key: command}
    if shell.timeout_key is not None:
        arguments[shell.timeout_key] = shell.timeout_value
    return tool_call_answer(
        "tool_call", call_id, shell.name, json.dumps(arguments), command=command
    )


def solve_answer(shell: ShellTool, agent_id: str, number: int, command: str) -> Answer:
    return shell_call_answer(shell, f"{SOLVE_ID_PREFIX}{agent_id}-{number}", command)


@dataclass(frozen=True)
class Turn:
    """What one request's answer depends on: the registration's values, the request's history
    and senders, and whether the solution has finished (the `done` marker)."""

    agent_id: str
    request_number: int
    channel_id: str
    task_event_id: str
    requester_pubkey: str
    requester_name: str
    solve_path: str
    solve_done: bool
    messages: Any
    senders: tuple[str, ...] = ()


def solve_step(shell: ShellTool, turn: Turn) -> Answer:
    """Run the solution (§4.5 steps 4-5): a solve call until the `done` marker exists or the
    cap is reached, then the final message (reason `solve_done` / `solve_cap_reached`)."""
    if turn.solve_done:
        return final_answer("solve_done")
    seen = count_solve_calls(turn.messages)
    if seen >= MAX_SOLVE_CALLS:
        return final_answer("solve_cap_reached")
    command = solve_command(
        channel_id=turn.channel_id,
        task_event_id=turn.task_event_id,
        requester_pubkey=turn.requester_pubkey,
        requester_name=turn.requester_name,
        solve_path=turn.solve_path,
    )
    return solve_answer(shell, turn.agent_id, seen + 1, command)


def post_command(channel_id: str, reply_to: str, mention: str, content: str) -> str:
    """`buzz messages send` of `content` in the thread of `reply_to`, p-tagging `mention`."""
    return (
        f"printf '%s\\n' {shlex.quote(content)} | buzz messages send --channel {channel_id} "
        f"--reply-to {reply_to} --mention {mention} --content -"
    )


def _post_step(shell: ShellTool, turn: Turn, prefix: str, step: str, command: str) -> Answer:
    """One post per turn: issued until it exits 0 (at most MAX_POST_CALLS), then final."""
    issued, succeeded = turn_posts(turn.messages, prefix)
    if succeeded:
        return final_answer(f"{step}_posted")
    if issued >= MAX_POST_CALLS:
        return final_answer(f"{step}_cap_reached")
    call_id = f"{prefix}{turn.agent_id}-{turn.request_number}"
    return shell_call_answer(shell, call_id, command)


def lead_step(shell: ShellTool, turn: Turn, workers: tuple[OracleTeammate, ...]) -> Answer:
    """The lead: woken by a worker's callback, post `DONE: …` to the user; woken by anything
    else (the task), delegate it to the first worker by an explicit mention."""
    by_pubkey = {worker.pubkey: worker for worker in workers}
    reporter = next((by_pubkey[key] for key in turn.senders if key in by_pubkey), None)
    if reporter is None:
        worker = workers[0]
        content = (
            f"@{worker.agent_id} please take this task from {turn.requester_name}: solve it, "
            "answer them in this thread, then report back to me."
        )
        command = post_command(turn.channel_id, turn.task_event_id, worker.pubkey, content)
        return _post_step(shell, turn, DELEGATE_ID_PREFIX, "delegate", command)
    content = f"DONE: {reporter.agent_id} finished the task; the answer is in this thread."
    command = post_command(turn.channel_id, turn.task_event_id, turn.requester_pubkey, content)
    return _post_step(shell, turn, DONE_ID_PREFIX, "done", command)


def worker_step(shell: ShellTool, turn: Turn, lead: OracleTeammate) -> Answer:
    """A worker: run the solution, then call the lead back (a message that starts with
    `DONE:` too: a worker's `DONE:` never ends a trial, §7.11)."""
    solve = solve_step(shell, turn)
    if solve.decision == "tool_call":
        return solve
    outcome = "the solution ran to the end" if turn.solve_done else "the solution failed"
    content = f"DONE: @{lead.agent_id} {outcome}; my answer is in this thread."
    command = post_command(turn.channel_id, turn.task_event_id, lead.pubkey, content)
    return _post_step(shell, turn, CALLBACK_ID_PREFIX, "callback", command)


def decide(shell: ShellTool, turn: Turn, team: tuple[OracleTeammate, ...]) -> Answer:
    """The answer for an agent of `team` (the roster; solo when it has no workers)."""
    me = next((member for member in team if member.agent_id == turn.agent_id), None)
    workers = tuple(member for member in team if member.kind == "worker")
    lead = next((member for member in team if member.kind == "orchestrator"), None)
    if me is None or lead is None or not workers:
        return solve_step(shell, turn)
    if me.kind == "orchestrator":
        return lead_step(shell, turn, workers)
    return worker_step(shell, turn, lead)


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
    if kind == "silent":  # the turn ends having run and posted nothing
        return Answer("fault", {"role": "assistant", "content": ""}, "stop", reason="silent")
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
