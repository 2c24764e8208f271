"""Sessions created during the batch window (agent-harness.md §1.5; acp/sessions.py).

End to end with buzz-acp, the real relay and the scripted fake agent of test_acp_bridge.py
(which logs every `session/new` with the wall-clock time it was requested and answered), plus
unit tests of the claim rules with stand-in slots.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from test_acp_bridge import Acp, Room, room, subscribed, turn_ends

from orchestra.agents.acp.queues import ChannelQueues
from orchestra.agents.acp.sessions import SessionManager
from orchestra.agents.acp.slot import Session

__all__ = ["room"]  # the fixture, imported for pytest

WINDOW_MS = 1500


def ts(record: dict[str, Any]) -> float:
    return datetime.fromisoformat(record["ts"].replace("Z", "+00:00")).timestamp()


def agent_sessions(acp: Acp) -> list[dict[str, Any]]:
    if not acp.agent_log.exists():
        return []
    records = [json.loads(line) for line in acp.agent_log.read_text().splitlines()]
    return [r for r in records if r["kind"] == "session"]


async def test_session_is_created_while_the_batch_window_runs(room: Room) -> None:
    acp = await room.start_acp(
        BUZZ_ACP_BATCH_WINDOW_MS=str(WINDOW_MS), FAKE_ACP_SESSION_DELAY="0.5"
    )
    await acp.wait_for(subscribed(room.channel))
    task = await room.send("@solo-1 hello")
    (completed,) = await acp.wait_for(lambda rs: [r for r in rs if r["event"] == "turn_completed"])
    (queued,) = acp.named("event_queued")
    (started,) = acp.named("turn_started")
    (session,) = agent_sessions(acp)
    window_end = ts(queued) + WINDOW_MS / 1000
    # session/new was asked for and answered before the window elapsed (not after it) ...
    assert session["requested"] < session["ts"] < window_end
    # ... and the turn still waited for the window (ts has millisecond resolution).
    assert ts(started) >= window_end - 0.002
    assert started["session_new"] is True and started["session_id"] == session["session_id"]
    assert completed["event_ids"] == [task] and completed["stop_reason"] == "end_turn"


async def test_a_pool_creates_only_the_sessions_its_turns_use(room: Room) -> None:
    second = (await room.user.channels_create(f"acp-{uuid.uuid4().hex[:8]}"))["channel_id"]
    await room.user.channels_add_member(second, room.agent_keys.pubkey, role="bot")
    acp = await room.start_acp(
        BUZZ_ACP_AGENTS="3",
        BUZZ_ACP_CHANNELS=f"{room.channel},{second}",
        BUZZ_ACP_BATCH_WINDOW_MS="600",
    )
    await acp.wait_for(lambda rs: any(r["event"] == "ready" for r in rs))
    await room.send("@solo-1 one")
    await room.user.messages_send(second, "@solo-1 two", mention=[room.agent_keys.pubkey])
    await acp.wait_for(lambda rs: len(turn_ends(rs)) >= 2)
    await room.send("@solo-1 one again")
    await acp.wait_for(lambda rs: len(turn_ends(rs)) >= 3)
    started = acp.named("turn_started")
    sessions = agent_sessions(acp)
    # One session per channel, each used by a turn; the follow-up reuses its warm session.
    assert len(sessions) == 2
    assert {s["session_id"] for s in sessions} == {s["session_id"] for s in started}
    assert [s["session_new"] for s in started] == [True, True, False]
    assert started[2]["session_id"] == started[0]["session_id"]
    assert len({s["slot"] for s in started[:2]}) == 2


async def test_rotation_and_failed_creation_keep_their_records(room: Room) -> None:
    acp = await room.start_acp(BUZZ_ACP_MAX_TURNS_PER_SESSION="1")
    await acp.wait_for(subscribed(room.channel))
    for n in (1, 2):
        await room.send(f"@solo-1 turn {n}")
        await acp.wait_for(lambda rs, n=n: len(turn_ends(rs)) >= n)
    records = acp.events()
    (rotated,) = acp.named("session_rotated")
    first, second = acp.named("turn_started")
    assert rotated["old_session_id"] == first["session_id"]
    assert first["seq"] < rotated["seq"] < second["seq"] and second["session_new"] is True
    assert len(agent_sessions(acp)) == 2
    assert [r["event"] for r in records].count("session_rotated") == 1


# --- the claim rules, with stand-in slots ----------------------------------------------------


class FakeSlot:
    def __init__(self, index: int) -> None:
        self.index = index
        self.sessions: dict[str, Session] = {}
        self.claimed_by: str | None = None
        self.busy = False
        self.created: list[str] = []

    async def new_session(self, config: Any, system_prompt: str) -> str:
        self.created.append(system_prompt)
        return f"ses_{self.index}_{len(self.created)}"


class FakePool:
    def __init__(self, slots: list[FakeSlot]) -> None:
        self.slots = slots

    def free_unclaimed(self) -> list[FakeSlot]:
        return [s for s in self.slots if not s.busy and s.claimed_by is None]

    def live_slots(self) -> list[FakeSlot]:
        return list(self.slots)


def manager(slots: list[FakeSlot], queues: ChannelQueues) -> SessionManager:
    config = SimpleNamespace(
        max_turns_per_session=0,
        memory=False,
        base_prompt="base",
        persona="",
        idle_timeout_s=5.0,
    )
    events = SimpleNamespace(emit=lambda *a, **k: None)
    prompts = SimpleNamespace(write=lambda *a, **k: None)
    return SessionManager(config, events, prompts, None, FakePool(slots), queues)  # type: ignore[arg-type]


def queue(queues: ChannelQueues, channel: str, at: float) -> None:
    queues.add(channel, {"id": f"{channel}-{at}", "created_at": 1, "pubkey": "p"}, at)


async def test_claims_never_keep_a_slot_from_older_demand() -> None:
    queues = ChannelQueues(max_queue=10, max_batch=10, window_s=1.0)
    slots = [FakeSlot(0), FakeSlot(1)]
    sessions = manager(slots, queues)
    queue(queues, "old", 1.0)
    queue(queues, "new", 2.0)
    slots[1].busy = True
    sessions.precreate(retry_waiters=1)
    # A retry waiting for a slot is older demand: the only free slot stays unclaimed.
    assert [s.claimed_by for s in slots] == [None, None]
    sessions.precreate(retry_waiters=0)
    # One free slot, two waiting channels: the older one claims it, the younger none.
    assert [s.claimed_by for s in slots] == ["old", None]
    slots[1].busy = False
    sessions.precreate(retry_waiters=0)
    assert [s.claimed_by for s in slots] == ["old", "new"]
    session, is_new, _ = await sessions.session_for(slots[0], "old")  # type: ignore[arg-type]
    assert is_new and session.session_id == "ses_0_1" and slots[0].claimed_by is None
    assert slots[0].sessions["old"] is session
    await sessions.close()


async def test_an_abandoned_claim_becomes_the_slots_warm_session() -> None:
    queues = ChannelQueues(max_queue=10, max_batch=10, window_s=1.0)
    slots = [FakeSlot(0), FakeSlot(1)]
    sessions = manager(slots, queues)
    queue(queues, "chan", 1.0)
    sessions.precreate(retry_waiters=0)
    assert slots[0].claimed_by == "chan"
    creation = sessions._claims["chan"].task
    # The channel's turn went to another slot (its claimed one was taken in between).
    sessions.taken("chan", slots[1])  # type: ignore[arg-type]
    assert slots[0].claimed_by is None
    await creation  # its done callbacks run in order: the registration before this resumes
    assert slots[0].sessions["chan"].session_id == "ses_0_1"
    # The turn on the other slot creates its own; the claimed slot's session is kept warm.
    session, is_new, _ = await sessions.session_for(slots[1], "chan")  # type: ignore[arg-type]
    assert is_new and session.session_id == "ses_1_1"
    await sessions.close()
