"""The real agent tree end to end (agent-harness.md §0.1, §1.4-§1.6, §1.10,
§1.11). buzz-acp -> buzz-agent -> buzz-dev-mcp -> bash run as real processes on the shared
relay; only the model is faked, by a `FakeLLM` on the OpenAI chat route scripted to call the
MCP `shell` tool. Each test has its own tree (own identity, channel and FakeLLM); all trees
are started together when the module begins, so their start-up costs overlap."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from agent_support import make_fifo, wait_for_exit
from fake_llm import FakeLLM, RecordedRequest, Reply, chat_text, chat_tool_calls, chat_usage
from tree_support import (
    Records,
    Room,
    Tree,
    command_lines,
    fifo_read,
    fifo_write,
    open_room,
    parent_pid,
    pid_alive,
    prompt_text,
    reply_command,
    start_tree,
)

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

SHELL = "buzz_dev_mcp__shell"
REPLY_TEXT = "Here is the summary you asked for.\n\n- first point\n  - indented detail"
# Distinct numbers per LLM call, so sums and cumulative counters can be told apart.
FIRST_USAGE = chat_usage(prompt=1234, completion=56, cached=700, reasoning=7)
SECOND_USAGE = chat_usage(prompt=2100, completion=44, cached=1900, reasoning=0)
USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens")

# Extra environment per tree. The "reply" tree logs at debug everywhere, so the secrecy check
# also covers the request/response bodies buzz-agent logs at that level.
TREE_ENV: dict[str, dict[str, str]] = {
    "reply": {"BUZZ_ACP_LOG_LEVEL": "debug", "BUZZ_AGENT_LOG_LEVEL": "debug"},
    "quiet": {},
    "batch": {},
    "sigterm": {},
    "stubborn": {},
}


@dataclass
class Stage:
    room: Room
    llm: FakeLLM
    tree: Tree
    api_key: str

    async def ready(self) -> None:
        await self.tree.wait_for_event("ready")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stages(
    relay_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, Stage]]:
    base = tmp_path_factory.mktemp("trees")
    async with contextlib.AsyncExitStack() as stack:
        rooms = await asyncio.gather(*(open_room(relay_url) for _ in TREE_ENV))
        built: dict[str, Stage] = {}
        for (name, env), room in zip(TREE_ENV.items(), rooms, strict=True):
            stack.push_async_callback(room.user.close)
            llm = stack.enter_context(FakeLLM())
            api_key = f"sk-tree-{uuid.uuid4().hex}"
            tree = await start_tree(room, llm.openai_env(key=api_key), base / name, **env)
            stack.push_async_callback(tree.kill)
            built[name] = Stage(room, llm, tree, api_key)
        yield built


def names_of(records: Records) -> list[str]:
    return [r["event"] for r in records]


def usage_numbers(record: dict[str, Any]) -> tuple[int, ...]:
    return tuple(record[key] for key in (*USAGE_KEYS, "llm_calls"))


def tool_results(request: RecordedRequest) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"] for m in request.body["messages"] if m["role"] == "tool"
    }


# ---- 1 + 4 + secrecy: a mention gets a threaded reply; the event log tells the story ---------


async def test_mention_is_answered_in_its_thread_and_no_secret_leaks(
    stages: dict[str, Stage],
) -> None:
    stage = stages["reply"]
    room, tree, llm = stage.room, stage.tree, stage.llm

    def answer(request: RecordedRequest) -> Reply:
        # What a model does with the prompt: follow its reply instruction. `env` (without the
        # agent's own key, which the shell legitimately holds) shows the model what tools see.
        send = f"printf '%s' {shlex.quote(REPLY_TEXT)} | {reply_command(prompt_text(request))}"
        return chat_tool_calls(
            [
                ("call_env", SHELL, {"command": "env | grep -v '^BUZZ_PRIVATE_KEY='"}),
                ("call_reply", SHELL, {"command": f"{send} --content -"}),
            ],
            usage=FIRST_USAGE,
        )

    llm.script(answer, chat_text("Answered in the thread.", usage=SECOND_USAGE))
    await stage.ready()
    task = await room.mention("@solo-1 please summarise the plan")
    (completed,) = await tree.wait_for_event("turn_completed")
    assert completed["stop_reason"] == "end_turn" and completed["event_ids"] == [task]

    (reply,) = await room.replies_to(task)
    assert reply["pubkey"] == room.agent_keys.pubkey
    assert reply["content"] == REPLY_TEXT
    assert ["h", room.channel] in reply["tags"]
    assert ["e", task, "", "reply"] in reply["tags"]
    assert [t[1] for t in reply["tags"] if t[0] == "p"] == [room.user_keys.pubkey]

    first, second = llm.requests
    assert f"Event ID: {task}" in prompt_text(first)
    results = tool_results(second)
    assert reply["id"] in results["call_reply"] and "[exit code: 0]" in results["call_reply"]
    assert f"BUZZ_RELAY_URL={room.relay_url}" in results["call_env"]
    assert "OPENAI_COMPAT" not in results["call_env"]  # provider variables never reach tools

    assert await tree.stop() == 0
    records = tree.events()
    assert_log_story(records, task, tree.stderr())
    assert_api_key_kept_secret(stage, records, llm.requests, await room_events(room))


def assert_log_story(records: Records, task: str, stderr: str) -> None:
    """§1.11: the records of one answered mention, in order, with FakeLLM's usage numbers."""
    names = names_of(records)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    lifecycle = [
        "startup",
        "agent_spawned",
        "agent_initialized",
        "relay_connected",
        "subscribed",
        "ready",
        "event_queued",
        "turn_started",
        "turn_delivered",
        "usage",
    ]
    positions = [names.index(name) for name in lifecycle]
    assert positions == sorted(positions), [names[p] for p in positions]
    assert names[-2:] == ["turn_completed", "shutdown"]
    (started,) = [r for r in records if r["event"] == "turn_started"]
    (delivered,) = [r for r in records if r["event"] == "turn_delivered"]
    (completed,) = [r for r in records if r["event"] == "turn_completed"]
    assert started["event_ids"] == delivered["event_ids"] == completed["event_ids"] == [task]
    assert started["session_new"] is True and started["attempt"] == 1
    turn_records = records[names.index("turn_started") : names.index("turn_completed")]
    assert {r["turn_id"] for r in turn_records if "turn_id" in r} == {started["turn_id"]}

    usage = [r for r in records if r["event"] == "usage"]
    cumulative = (1234 + 2100, 56 + 44, 700 + 1900, 7 + 0, 2)
    assert [usage_numbers(r) for r in usage] == [(1234, 56, 700, 7, 1), cumulative]
    assert {r["session_id"] for r in usage} == {started["session_id"]}
    turn_usage = completed["usage"]["turn"]
    assert usage_numbers(turn_usage) == cumulative
    assert completed["usage"]["session"] == turn_usage  # the session's first turn
    assert "input=1234 output=56 cached=700" in stderr
    # Each model round's usage arrives before the tools it asked for run.
    tools = [i for i, r in enumerate(records) if r["event"] == "tool_call"]
    usage_at = [i for i, r in enumerate(records) if r["event"] == "usage"]
    assert tools and usage_at[0] < tools[0] and tools[-1] < usage_at[1]
    finished = {(r["tool_call_id"], r["status"]) for r in records if r["event"] == "tool_call"}
    assert {status for _, status in finished} >= {"completed"}
    assert len({call for call, _ in finished}) == 2
    (message,) = [r for r in records if r["event"] == "agent_message"]
    assert message["text"] == "Answered in the thread."
    assert names.index("agent_message") < names.index("turn_completed")
    assert records[-1]["reason"] == "signal" and records[-1]["exit_code"] == 0


async def room_events(room: Room) -> Records:
    """Everything the relay stores from the agent or in the room's channel."""
    return await room.user.query([{"authors": [room.agent_keys.pubkey]}, {"#h": [room.channel]}])


def assert_api_key_kept_secret(
    stage: Stage, records: Records, requests: list[RecordedRequest], relay_events: Records
) -> None:
    # Positive control: this key is the one buzz-agent really sent to the model server.
    assert requests[0].headers["authorization"] == f"Bearer {stage.api_key}"
    stderr = stage.tree.stderr()
    assert "llm request body" in stderr  # debug level: bodies are logged, headers must not be
    places = {
        "acp/agent/mcp stderr": stderr,
        "event log": json.dumps(records),
        "model request bodies": json.dumps([r.body for r in requests]),
        "relay events": json.dumps(relay_events),
        "shell environment": tool_results(requests[1])["call_env"],
    }
    for place, text in places.items():
        assert stage.api_key not in text, place
        assert stage.room.agent_keys.secret_hex not in text, place
    assert relay_events  # the channel and the reply are there


# ---- 2: only a p tag for the agent wakes it ------------------------------------------------


async def test_messages_without_a_p_tag_for_the_agent_and_its_own_wake_nothing(
    stages: dict[str, Stage],
) -> None:
    stage = stages["quiet"]
    room, tree = stage.room, stage.tree
    await stage.ready()
    plain = await room.post_raw("@solo-1 are you there? (no p tag)")
    other = await room.post_raw("@solo-1 this tags someone else", [["p", room.user_keys.pubkey]])
    own = await room.post_as_agent("@solo-1 a note to myself")
    task = await room.mention("@solo-1 the one real request")
    # The real mention's turn is the positive signal that everything before it was handled.
    await tree.wait_for_event("turn_completed")
    records = tree.events()
    assert [r["event_ids"] for r in records if r["event"] == "turn_started"] == [[task]]
    assert [r["event_id"] for r in records if r["event"] == "event_queued"] == [task]
    ignored = [(r["event_id"], r["reason"]) for r in records if r["event"] == "event_ignored"]
    assert ignored == [(own, "self")]
    log_text = json.dumps(records)
    assert plain not in log_text and other not in log_text  # never even delivered
    (request,) = stage.llm.requests
    for quiet in (plain, other, own):
        assert quiet not in json.dumps(request.body)


# ---- 3: mentions arriving during a turn form one batched follow-up turn ------------------


async def test_mentions_during_a_turn_are_batched_into_the_next_turn(
    stages: dict[str, Stage],
) -> None:
    stage = stages["batch"]
    room, tree, llm = stage.room, stage.tree, stage.llm
    gate = make_fifo(tree.workdir / "gate.fifo")
    llm.script(
        chat_tool_calls([("call_wait", SHELL, {"command": "cat gate.fifo"})]),
        chat_text("first request done"),
        chat_text("both follow-ups done"),
    )
    await stage.ready()
    first = await room.mention("@solo-1 first request")
    await tree.wait_for_event("turn_started")
    second = await room.mention("@solo-1 second request")
    third = await room.mention("@solo-1 third request")
    await tree.wait_for_event("event_queued", count=3)
    await fifo_write(gate, "go\n")
    ends = await tree.wait_for_event("turn_completed", count=2)
    records = tree.events()

    started = [r for r in records if r["event"] == "turn_started"]
    assert len(started) == 2 and started[0]["event_ids"] == [first]
    assert sorted(started[1]["event_ids"]) == sorted([second, third])
    assert [e["event_ids"] for e in ends] == [s["event_ids"] for s in started]
    # Both follow-ups were queued while the first turn was still in flight.
    queued = {r["event_id"]: r["seq"] for r in records if r["event"] == "event_queued"}
    assert max(queued[second], queued[third]) < ends[0]["seq"] < started[1]["seq"]
    assert started[1]["session_new"] is False  # the warm session is reused

    assert len(llm.requests) == 3
    assert "go" in tool_results(llm.requests[1])["call_wait"]
    batch_prompt = prompt_text(llm.requests[2])
    assert "[Buzz events — 2 events]" in batch_prompt
    for event_id in (second, third):
        assert f"Event ID: {event_id}" in batch_prompt
    assert f"Event ID: {first}" not in batch_prompt


# ---- 5: SIGTERM mid-turn ends the whole tree ----------------------------------------------


@dataclass
class Shutdown:
    exit_code: int
    survivors: list[tuple[int, list[str]]]
    records: Records
    stderr: str


async def sigterm_during_shell(stage: Stage, background: str) -> Shutdown:
    """The model runs `<background> &` and a foreground sleep; once both run, every process
    of the tree is recorded and buzz-acp gets SIGTERM. Survivors are reported (and killed)."""
    room, tree = stage.room, stage.tree
    started = make_fifo(tree.workdir / "started.fifo")
    # The foreground child reports before it becomes `sleep`, so both children exist by then.
    command = f"{background} & (echo started > started.fifo; exec sleep 301)"
    stage.llm.script(chat_tool_calls([("call_sleep", SHELL, {"command": command})]))
    await stage.ready()
    await room.mention("@solo-1 run the long job")
    assert (await fifo_read(started)).strip() == "started"
    tree_pids = tree.process_ids()
    commands = command_lines(tree_pids)
    (mcp,) = [pid for pid, argv in commands.items() if argv[-1].endswith("buzz-dev-mcp")]
    (shell,) = [p for p in tree_pids if parent_pid(p) == mcp and commands[p][:2] == ["bash", "-c"]]
    assert len([pid for pid in tree_pids if parent_pid(pid) == shell]) == 2, commands
    exit_code = await tree.stop()
    survivors = []
    for pid in tree_pids[1:]:
        with contextlib.suppress(TimeoutError):
            await wait_for_exit(pid, 2.0)  # let an already-sent SIGKILL land
        if pid_alive(pid):
            survivors.append((pid, commands[pid]))
            os.kill(pid, signal.SIGKILL)  # never leave them behind
    return Shutdown(exit_code, survivors, tree.events(), tree.stderr())


def assert_clean_shutdown(result: Shutdown) -> None:
    assert result.exit_code == 0
    assert not result.survivors
    records = result.records
    (completed,) = [r for r in records if r["event"] == "turn_completed"]
    assert completed["stop_reason"] == "cancelled" and completed["cancel_reason"] == "shutdown"
    assert records[-1]["event"] == "shutdown"
    assert records[-1]["reason"] == "signal" and records[-1]["exit_code"] == 0
    assert "failure_notice" not in names_of(records)
    assert "Traceback" not in result.stderr


async def test_sigterm_during_a_shell_command_leaves_no_process_alive(
    stages: dict[str, Stage],
) -> None:
    assert_clean_shutdown(await sigterm_during_shell(stages["sigterm"], "sleep 300"))


async def test_sigterm_also_ends_a_child_that_ignores_sigterm(
    stages: dict[str, Stage],
) -> None:
    result = await sigterm_during_shell(stages["stubborn"], "(trap '' TERM; exec sleep 300)")
    assert_clean_shutdown(result)
