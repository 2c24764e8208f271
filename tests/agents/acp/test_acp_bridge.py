"""buzz-acp against a real relay with a scripted fake ACP agent (agent-harness.md §7 items 2-4).

Run directly (`python test_acp_bridge.py --fake-agent`) this file *is* the fake agent: an ACP
agent whose behaviour per prompt is chosen by `fake:<mode>` words in the Buzz message content,
and which appends every prompt it receives to the JSON-lines file in `FAKE_ACP_LOG`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAKE_AGENT_FILE = Path(__file__).resolve()


# --- the fake agent (runs in the child process) ----------------------------------------------


def run_fake_agent() -> None:
    import acp
    from acp.schema import AgentCapabilities, Implementation, InitializeResponse, NewSessionResponse

    log_path = os.environ["FAKE_ACP_LOG"]
    state_dir = Path(os.environ.get("FAKE_ACP_STATE", "/tmp"))

    def record(**fields: Any) -> None:
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"pid": os.getpid(), "ts": time.time(), **fields}) + "\n")

    class FakeAgent:
        def __init__(self) -> None:
            self.conn: Any = None
            self.cancelled: dict[str, asyncio.Event] = {}
            self.calls = 0

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            return InitializeResponse(
                protocol_version=protocol_version,
                agent_capabilities=AgentCapabilities(),
                agent_info=Implementation(name="fake-agent", version="9.9"),
                field_meta=None
                if os.environ.get("FAKE_ACP_NO_META")
                else {"buzz": {"systemPrompt": True}},
            )

        async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
            requested = time.time()
            # A session/new as slow as buzz-agent's (it starts the MCP server).
            await asyncio.sleep(float(os.environ.get("FAKE_ACP_SESSION_DELAY", "0")))
            if os.environ.get("FAKE_ACP_SESSION_FAIL"):
                raise acp.RequestError(-32603, "Internal error", {"detail": "mcp server failed"})
            session_id = f"ses_{uuid.uuid4().hex[:24]}"
            record(
                kind="session",
                requested=requested,
                session_id=session_id,
                cwd=cwd,
                meta=kwargs,
                mcp_servers=[s.model_dump() for s in mcp_servers or []],
            )
            self.cancelled[session_id] = asyncio.Event()
            return NewSessionResponse(session_id=session_id)

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            record(kind="cancel", session_id=session_id)
            if "fake:hang-ignore" not in self.current_text:
                self.cancelled[session_id].set()

        current_text = ""

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> Any:
            text = "\n\n".join(block.text for block in prompt)
            self.current_text = text
            record(kind="prompt", session_id=session_id, text=text)
            self.calls += 1
            cancelled = self.cancelled[session_id]
            cancelled.clear()
            usage = {
                "inputTokens": 100 * self.calls,
                "outputTokens": 10 * self.calls,
                "cachedTokens": 5,
                "reasoningTokens": 0,
                "llmCalls": self.calls,
            }
            await self.conn.ext_notification(
                "goose/unstable/session/update", {"sessionId": session_id, "usage": usage}
            )
            await self.conn.session_update(session_id, acp.update_agent_message_text("done: ok"))
            if "fake:exit-once" in text and not (state_dir / "exited").exists():
                (state_dir / "exited").touch()
                os._exit(3)
            if "fake:error-retryable" in text:
                raise acp.RequestError(
                    -32603,
                    "Internal error",
                    {
                        "kind": "llm_http_error",
                        "status": 503,
                        "retryable": True,
                        "detail": "upstream 503",
                    },
                )
            if "fake:error-fatal" in text:
                raise acp.RequestError(
                    -32603,
                    "Internal error",
                    {
                        "kind": "llm_http_error",
                        "status": 401,
                        "retryable": False,
                        "detail": "upstream 401",
                    },
                )
            if "fake:grandchild" in text:
                child = await asyncio.create_subprocess_exec("sleep", "300", start_new_session=True)
                (state_dir / "grandchild.pid").write_text(str(child.pid))
            if "fake:slow" in text:
                seconds = float(text.split("fake:slow=")[1].split()[0])
                try:
                    await asyncio.wait_for(cancelled.wait(), seconds)
                    return acp.PromptResponse(stop_reason="cancelled")
                except TimeoutError:
                    pass
            if "fake:hang" in text or "fake:grandchild" in text:
                await cancelled.wait()
                if "fake:hang-ignore" in text:
                    await asyncio.Event().wait()
                return acp.PromptResponse(stop_reason="cancelled")
            stop = "end_turn"
            for reason in ("max_tokens", "refusal", "max_turn_requests"):
                if f"fake:{reason}" in text:
                    stop = reason
            turn = {
                "inputTokens": 100,
                "outputTokens": 10,
                "cachedTokens": 5,
                "reasoningTokens": 1,
                "llmCalls": 1,
            }
            return acp.PromptResponse(
                stop_reason=stop, field_meta={"buzz": {"usage": {"turn": turn, "session": usage}}}
            )

    asyncio.run(acp.run_agent(FakeAgent()))


if __name__ == "__main__" and "--fake-agent" in sys.argv:
    run_fake_agent()
    sys.exit(0)


# --- the tests (run in pytest) -------------------------------------------------------------

import pytest  # noqa: E402
from tree_support import follow_event_log  # noqa: E402

from orchestra.buzz import BuzzClient  # noqa: E402
from orchestra.evidence.export import collect_channel_events  # noqa: E402
from orchestra.evidence.normalize import build_evidence  # noqa: E402
from orchestra.nostr.keys import Keys  # noqa: E402

WAIT_S = 30.0


@dataclass
class Acp:
    """A running buzz-acp process and the files it writes."""

    process: asyncio.subprocess.Process
    events_path: Path
    agent_log: Path
    state_dir: Path
    stderr_path: Path

    def events(self) -> list[dict[str, Any]]:
        if not self.events_path.exists():
            return []
        lines = self.events_path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def named(self, name: str) -> list[dict[str, Any]]:
        return [record for record in self.events() if record["event"] == name]

    def prompts(self) -> list[dict[str, Any]]:
        if not self.agent_log.exists():
            return []
        records = [json.loads(line) for line in self.agent_log.read_text().splitlines()]
        return [r for r in records if r["kind"] == "prompt"]

    async def wait_for(
        self, predicate: Callable[[list[dict[str, Any]]], Any], limit_s: float = WAIT_S
    ) -> Any:
        return await follow_event_log(self, predicate, limit_s)

    def stderr(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path.exists() else ""

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), 30)


@dataclass
class Room:
    """A channel with a trial user and an agent identity (member) on the shared relay."""

    relay_url: str
    user: Any
    agent_keys: Keys
    channel: str
    tmp_path: Path
    running: list[Acp] = field(default_factory=list)

    async def send(self, content: str, mention: bool = True, reply_to: str | None = None) -> str:
        if not mention:  # publish raw: the CLI would turn a member's @Name into a p tag
            tags = [["h", self.channel]] + ([["e", reply_to, "", "reply"]] if reply_to else [])
            return str((await self.user.publish(9, content, tags))["event_id"])
        result = await self.user.messages_send(
            self.channel,
            content,
            mention=[self.agent_keys.pubkey] if mention else None,
            reply_to=reply_to,
        )
        return str(result["event_id"])

    async def start_acp(self, **env: str) -> Acp:
        index = len(self.running)
        events_path = self.tmp_path / f"events{index}.jsonl"
        agent_log = self.tmp_path / f"agent{index}.jsonl"
        state_dir = self.tmp_path / f"state{index}"
        state_dir.mkdir()
        stderr_path = self.tmp_path / f"stderr{index}.log"
        full_env = {
            **os.environ,
            "BUZZ_RELAY_URL": self.relay_url,
            "BUZZ_PRIVATE_KEY": self.agent_keys.secret_hex,
            "BUZZ_ACP_AGENT_COMMAND": sys.executable,
            "BUZZ_ACP_AGENT_ARGS": f"{FAKE_AGENT_FILE},--fake-agent",
            "BUZZ_ACP_MCP_COMMAND": "none",
            "BUZZ_ACP_CHANNELS": self.channel,
            "BUZZ_ACP_EVENT_LOG": str(events_path),
            "BUZZ_ACP_BATCH_WINDOW_MS": "300",
            "BUZZ_ACP_NO_MEMORY": "true",
            "FAKE_ACP_LOG": str(agent_log),
            "FAKE_ACP_STATE": str(state_dir),
            **env,
        }
        with stderr_path.open("wb") as stderr:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "orchestra.agents.acp",
                env=full_env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=stderr,
                cwd=self.tmp_path,
            )
        acp = Acp(process, events_path, agent_log, state_dir, stderr_path)
        self.running.append(acp)
        return acp


@pytest.fixture
async def room(relay_url: str, tmp_path: Path) -> AsyncIterator[Room]:
    user_keys, agent_keys = Keys.generate(), Keys.generate()
    user = BuzzClient.from_keys(relay_url, user_keys)
    agent = BuzzClient.from_keys(relay_url, agent_keys)
    await user.users_set_profile(display_name="Trial User")
    await agent.users_set_profile(display_name="solo-1")
    channel = (await user.channels_create(f"acp-{uuid.uuid4().hex[:8]}"))["channel_id"]
    await user.channels_add_member(channel, agent_keys.pubkey, role="bot")
    await agent.close()
    room = Room(relay_url, user, agent_keys, channel, tmp_path)
    try:
        yield room
    finally:
        for acp in room.running:
            if acp.process.returncode is None:
                acp.process.kill()
                await acp.process.wait()
        await user.close()


def subscribed(channel: str) -> Callable[[list[dict[str, Any]]], Any]:
    return lambda records: any(
        r["event"] == "subscribed" and r["channel_id"] == channel for r in records
    )


def turn_ends(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["event"] in ("turn_completed", "turn_failed")]


async def test_mention_wakes_and_log_records(room: Room) -> None:
    acp = await room.start_acp()
    await acp.wait_for(subscribed(room.channel))
    plain = await room.send("@solo-1 plain text without a p tag", mention=False)
    task = await room.send("@solo-1 please summarise")
    completed = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_completed"])
    assert completed[0]["stop_reason"] == "end_turn"
    assert completed[0]["event_ids"] == [task]
    (prompt,) = acp.prompts()
    assert f"Event ID: {task}" in prompt["text"] and plain not in prompt["text"]
    assert "From: Trial User (npub: npub1" in prompt["text"]
    assert await acp.stop() == 0
    records = acp.events()
    names = [r["event"] for r in records]
    for expected in [
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
        "agent_message",
        "turn_completed",
        "shutdown",
    ]:
        assert expected in names, expected
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert all(r["agent_pubkey"] == room.agent_keys.pubkey for r in records)
    assert (
        names.index("turn_started") < names.index("turn_delivered") < names.index("turn_completed")
    )
    assert plain not in json.dumps(records)  # never delivered by the relay: no p tag
    startup = acp.named("startup")[0]
    assert startup["channels"] == [room.channel] and startup["base_prompt"] == "builtin"
    assert acp.named("subscribed")[0]["channel_name"].startswith("acp-")
    assert completed[0]["usage"]["turn"] == {
        "input_tokens": 100,
        "output_tokens": 10,
        "cached_input_tokens": 5,
        "cache_write_input_tokens": 0,
        "reasoning_tokens": 1,
        "llm_calls": 1,
    }
    assert acp.named("shutdown")[-1]["exit_code"] == 0
    assert "\x1b[" not in acp.stderr()
    assert "subscribed to channel " + room.channel in acp.stderr()
    assert room.agent_keys.secret_hex not in acp.stderr() + json.dumps(records)


async def test_replay_window_and_own_events(room: Room) -> None:
    early = await room.send("@solo-1 posted before buzz-acp started")
    acp = await room.start_acp(BUZZ_ACP_REPLAY_SECS="60")
    completed = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_completed"])
    assert completed[0]["event_ids"] == [early]
    async with BuzzClient.from_keys(room.relay_url, room.agent_keys) as agent:
        own = (
            await agent.publish(
                9, "note to self", [["h", room.channel], ["p", room.agent_keys.pubkey]]
            )
        )["event_id"]
    ignored = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "event_ignored"])
    assert ignored[0]["event_id"] == own and ignored[0]["reason"] == "self"
    assert [r["event_id"] for r in acp.named("event_queued")] == [early]


async def test_author_gate_nobody(room: Room) -> None:
    acp = await room.start_acp(BUZZ_ACP_RESPOND_TO="nobody")
    await acp.wait_for(subscribed(room.channel))
    event = await room.send("@solo-1 hello")
    ignored = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "event_ignored"])
    assert ignored[0] == ignored[0] | {
        "event_id": event,
        "reason": "author_gate",
        "author": room.user.pubkey,
    }


async def test_batching_and_one_turn_per_channel(room: Room) -> None:
    acp = await room.start_acp(BUZZ_ACP_BATCH_WINDOW_MS="800")
    await acp.wait_for(subscribed(room.channel))
    first = [await room.send(f"@solo-1 part {i} fake:slow=1.5") for i in range(3)]
    await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_started"])
    later = [await room.send(f"@solo-1 later {i}") for i in range(2)]
    ends = await acp.wait_for(lambda rs: len(turn_ends(rs)) >= 2 and turn_ends(rs))
    started = acp.named("turn_started")
    # Within a batch events are ordered by (created_at, id), not by arrival.
    assert [set(s["event_ids"]) for s in started] == [set(first), set(later)]
    assert [e["event_ids"] for e in ends] == [s["event_ids"] for s in started]
    # The second turn started only after the first one ended.
    assert started[1]["seq"] > ends[0]["seq"]
    prompts = acp.prompts()
    assert "[Buzz events — 3 events]" in prompts[0]["text"]
    assert "--- Event 3 of 3 (mention) ---" in prompts[0]["text"]
    assert "[Buzz events — 2 events]" in prompts[1]["text"]
    assert started[1]["session_new"] is False  # the warm session is reused


async def test_full_queue_drops_the_oldest_event(room: Room) -> None:
    acp = await room.start_acp(BUZZ_ACP_MAX_QUEUE="1", BUZZ_ACP_BATCH_WINDOW_MS="0")
    await acp.wait_for(subscribed(room.channel))
    await room.send("@solo-1 fake:slow=1.5")
    await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_started"])
    dropped_id = await room.send("@solo-1 waits, then is pushed out")
    kept = await room.send("@solo-1 the newest one")
    (dropped,) = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "event_dropped"])
    assert dropped == dropped | {"event_id": dropped_id, "reason": "queue_full"}
    await acp.wait_for(lambda rs: len(turn_ends(rs)) >= 2)
    assert acp.named("turn_started")[1]["event_ids"] == [kept]


async def test_pool_of_two_serves_two_channels_at_once(room: Room) -> None:
    second = (await room.user.channels_create(f"acp-{uuid.uuid4().hex[:8]}"))["channel_id"]
    await room.user.channels_add_member(second, room.agent_keys.pubkey, role="bot")
    acp = await room.start_acp(BUZZ_ACP_AGENTS="2", BUZZ_ACP_CHANNELS=f"{room.channel},{second}")
    await acp.wait_for(lambda rs: any(r["event"] == "ready" for r in rs))
    await room.send("@solo-1 one fake:slow=1")
    await room.user.messages_send(
        second, "@solo-1 two fake:slow=1", mention=[room.agent_keys.pubkey]
    )
    await acp.wait_for(lambda rs: len(turn_ends(rs)) >= 2)
    records = acp.events()
    starts = [r for r in records if r["event"] == "turn_started"]
    first_end = turn_ends(records)[0]["seq"]
    assert len(starts) == 2 and all(s["seq"] < first_end for s in starts)
    assert {s["channel_id"] for s in starts} == {room.channel, second}
    assert {s["slot"] for s in starts} == {0, 1}


async def test_retry_then_failure_notice(room: Room) -> None:
    acp = await room.start_acp(BUZZ_ACP_MAX_RETRIES="1")
    await acp.wait_for(subscribed(room.channel))
    task = await room.send("@solo-1 fake:error-retryable")
    notice = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "failure_notice"])
    failed = acp.named("turn_failed")
    assert [(f["attempt"], f["will_retry"], f["retryable"]) for f in failed] == [
        (1, True, True),
        (2, False, True),
    ]
    assert failed[0]["retry_in_s"] == 5 and "upstream 503" in failed[0]["error"]
    assert [(f["error_kind"], f["http_status"]) for f in failed] == [("llm_http_error", 503)] * 2
    assert [s["event_ids"] for s in acp.named("turn_started")] == [[task], [task]]
    assert notice[0]["reply_to"] == task
    (event,) = await room.user.query([{"ids": [notice[0]["event_id"]]}])
    assert event["content"].startswith("⚠️ I could not finish processing this request (")
    assert event["content"].endswith("). Please try again.")
    assert ["buzz", "turn-failed"] in event["tags"] and ["e", task, "", "reply"] in event["tags"]
    assert not [t for t in event["tags"] if t[0] == "p"]
    assert "turn failed for channel" in acp.stderr() and "giving up" in acp.stderr()
    # The notice is harness text, not the agent's answer: the evidence a verifier reads (built
    # from the channel as the export reads it) holds the task and no message by the agent.
    raw = await collect_channel_events(room.user, room.channel)
    assert notice[0]["event_id"] in {e["id"] for e in raw}
    evidence = build_evidence(
        run_id="job",
        trial_id="trial",
        channel_id=room.channel,
        task_name="t",
        task_event_id=task,
        completion_message_id=None,
        identities={"solo-1": {"role": "orchestrator", "pubkey": room.agent_keys.pubkey}},
        directory=[],
        scripted_events=[],
        observed_channels=[],
        raw_events=raw,
    )
    assert [m["id"] for m in evidence["messages"]] == [task]


async def test_non_retryable_error_and_notices_off(room: Room) -> None:
    acp = await room.start_acp(BUZZ_ACP_FAILURE_NOTICES="false")
    await acp.wait_for(subscribed(room.channel))
    await room.send("@solo-1 fake:error-fatal")
    failed = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_failed"])
    assert failed[0]["retryable"] is False and failed[0]["will_retry"] is False
    assert failed[0]["error_kind"] == "llm_http_error" and failed[0]["http_status"] == 401
    for ended, reason in enumerate(("max_tokens", "refusal", "max_turn_requests"), start=2):
        await room.send(f"@solo-1 fake:{reason}")
        await acp.wait_for(lambda rs, n=ended: len(turn_ends(rs)) >= n)
    assert [c["stop_reason"] for c in acp.named("turn_completed")] == [
        "max_tokens",
        "refusal",
        "max_turn_requests",
    ]
    stderr = acp.stderr()
    for line in (
        "turn hit max_tokens for channel",
        "turn refused for channel",
        "turn hit max_turn_requests for channel",
    ):
        assert line in stderr
    assert not acp.named("failure_notice")


async def test_session_that_cannot_be_created_fails_the_turn(room: Room) -> None:
    acp = await room.start_acp(FAKE_ACP_SESSION_FAIL="1")
    await acp.wait_for(subscribed(room.channel))
    task = await room.send("@solo-1 hello")
    notice = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "failure_notice"])
    (started,) = acp.named("turn_started")
    (failed,) = acp.named("turn_failed")
    assert "session_id" not in started and started["event_ids"] == [task]
    assert failed["turn_id"] == started["turn_id"] and failed["will_retry"] is False
    assert failed["error"].startswith("could not start the turn: ")
    assert notice[0]["reply_to"] == task


async def test_idle_timeout_cancels_and_notifies(room: Room) -> None:
    acp = await room.start_acp(BUZZ_ACP_IDLE_TIMEOUT="1", BUZZ_ACP_MAX_TURN_DURATION="60")
    await acp.wait_for(subscribed(room.channel))
    await room.send("@solo-1 fake:hang")
    notice = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "failure_notice"])
    (completed,) = acp.named("turn_completed")
    assert completed["stop_reason"] == "cancelled" and completed["cancel_reason"] == "idle_timeout"
    assert notice[0]["reason"] == "idle timeout"
    assert "turn cancelled for channel" in acp.stderr()


async def test_agent_exit_mid_turn_is_retried(room: Room) -> None:
    acp = await room.start_acp()
    await acp.wait_for(subscribed(room.channel))
    task = await room.send("@solo-1 fake:exit-once")
    completed = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_completed"])
    assert completed[0]["event_ids"] == [task] and completed[0]["stop_reason"] == "end_turn"
    (exited,) = acp.named("agent_exited")
    assert exited["during_turn"] is True and exited["exit_code"] == 3
    (failed,) = acp.named("turn_failed")
    assert (
        failed["retryable"] and failed["will_retry"] and failed["error"] == "agent process exited"
    )
    assert "error_kind" not in failed and "http_status" not in failed
    assert len(acp.named("agent_spawned")) == 2
    assert acp.named("turn_started")[1]["session_new"] is True  # the old session died with it
    (rotated,) = acp.named("session_rotated")
    assert rotated["reason"] == "agent_restarted"
    assert rotated["old_session_id"] == acp.named("turn_started")[0]["session_id"]


async def test_sigterm_ends_the_whole_tree(room: Room) -> None:
    acp = await room.start_acp()
    await acp.wait_for(subscribed(room.channel))
    await room.send("@solo-1 fake:grandchild")
    await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_delivered"])
    pid_file = acp.state_dir / "grandchild.pid"
    await acp.wait_for(lambda _: pid_file.exists())
    grandchild = int(pid_file.read_text())
    agent_pid = acp.named("agent_spawned")[0]["pid"]
    assert await acp.stop() == 0
    (completed,) = acp.named("turn_completed")
    assert completed["cancel_reason"] == "shutdown"
    assert acp.named("shutdown")[-1] == acp.named("shutdown")[-1] | {
        "reason": "signal",
        "exit_code": 0,
    }
    assert not acp.named("failure_notice")
    for pid in (agent_pid, grandchild):
        assert not pid_alive(pid), pid


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


async def test_inline_system_prompt_rotation_memory_and_prompt_log(room: Room) -> None:
    async with BuzzClient.from_keys(room.relay_url, room.agent_keys) as agent:
        await agent.mem_set("core", "The launch date is 2027-03-01.")
    persona = room.tmp_path / "persona.md"
    persona.write_text("You are the release manager.\n")
    acp = await room.start_acp(
        FAKE_ACP_NO_META="1",
        BUZZ_ACP_NO_MEMORY="false",
        BUZZ_ACP_MAX_TURNS_PER_SESSION="1",
        BUZZ_ACP_SYSTEM_PROMPT_FILE=str(persona),
        BUZZ_ACP_PROMPT_LOG=str(room.tmp_path / "prompts.jsonl"),
    )
    await acp.wait_for(subscribed(room.channel))
    await room.send("@solo-1 first")
    await acp.wait_for(lambda rs: len(turn_ends(rs)) >= 1)
    await room.send("@solo-1 second")
    await acp.wait_for(lambda rs: len(turn_ends(rs)) >= 2)
    first, second = acp.prompts()
    # Inline delivery: the system prompt precedes the first prompt of each new session.
    for prompt in (first, second):
        assert prompt["text"].startswith("[Base]\n# Working in Buzz")
        assert "[System]\nYou are the release manager.\n\n[Agent Memory — core]\n" in prompt["text"]
        assert "The launch date is 2027-03-01.\n\n[Context]\n" in prompt["text"]
    assert first["session_id"] != second["session_id"]
    (rotated,) = acp.named("session_rotated")
    assert rotated["old_session_id"] == first["session_id"]
    assert [s["session_new"] for s in acp.named("turn_started")] == [True, True]
    assert acp.named("agent_initialized")[0]["system_prompt_delivery"] == "inline"
    logged = [
        json.loads(line) for line in (room.tmp_path / "prompts.jsonl").read_text().splitlines()
    ]
    assert [r["kind"] for r in logged] == ["system", "prompt", "system", "prompt"]
    assert logged[1]["turn_id"] == acp.named("turn_started")[0]["turn_id"]
    assert logged[1]["text"] == first["text"]


async def test_removal_from_the_channel_stops_serving_it(room: Room) -> None:
    acp = await room.start_acp()
    await acp.wait_for(subscribed(room.channel))
    await room.user.channels_remove_member(room.channel, room.agent_keys.pubkey)
    (gone,) = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "unsubscribed"])
    assert gone["channel_id"] == room.channel and gone["reason"] == "removed"
    await room.send("@solo-1 are you there?", mention=False)
    await room.user.channels_add_member(room.channel, room.agent_keys.pubkey, role="bot")
    await acp.wait_for(lambda rs: len([r for r in rs if r["event"] == "subscribed"]) >= 2)
    back = await room.send("@solo-1 welcome back")
    completed = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_completed"])
    assert completed[0]["event_ids"] == [back]


@pytest.mark.slow
async def test_agent_ignoring_cancel_is_killed_and_replaced(room: Room) -> None:
    acp = await room.start_acp(BUZZ_ACP_IDLE_TIMEOUT="1", BUZZ_ACP_MAX_TURN_DURATION="60")
    await acp.wait_for(subscribed(room.channel))
    await room.send("@solo-1 fake:hang-ignore")
    failed = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_failed"])
    assert failed[0]["retryable"] is False and failed[0]["will_retry"] is False
    assert "error_kind" not in failed[0]
    assert "did not answer session/cancel within 10 s" in failed[0]["error"]
    await acp.wait_for(lambda rs: len([r for r in rs if r["event"] == "agent_initialized"]) >= 2)
    assert acp.named("failure_notice")


async def test_relay_restart_is_survived(start_relay: Any, tmp_path: Path) -> None:
    relay = start_relay()
    user_keys, agent_keys = Keys.generate(), Keys.generate()
    user = BuzzClient.from_keys(relay.url, user_keys)
    channel = (await user.channels_create("acp-restart"))["channel_id"]
    await user.channels_add_member(channel, agent_keys.pubkey, role="bot")
    room = Room(relay.url, user, agent_keys, channel, tmp_path)
    try:
        acp = await room.start_acp()
        await acp.wait_for(subscribed(channel))
        await asyncio.to_thread(relay.restart)
        dropped = await acp.wait_for(
            lambda rs: [r for r in rs if r["event"] == "relay_disconnected"]
        )
        assert dropped[0]["reconnect_in_s"] == 1
        task = await room.send("@solo-1 still there?")
        completed = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_completed"])
        assert completed[0]["event_ids"] == [task]
        assert "relay disconnected: " in acp.stderr()
        assert await acp.stop() == 0
    finally:
        for acp in room.running:
            if acp.process.returncode is None:
                acp.process.kill()
                await acp.process.wait()
        await user.close()
