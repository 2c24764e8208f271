"""Completion rules of orchestrator.md §7.11 on live-updated state (settle window shortened)."""

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from documents_support import log_record

from orchestra.trial import completion
from orchestra.trial.completion import AgentProcessExited, CompletionRules, CompletionWatch
from orchestra.trial.eventlog import AgentLogState

AGENT = "ab" * 32


@dataclass
class FakeObserver:
    events: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None

    def authored_by(self, pubkey: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["pubkey"] == pubkey]


@dataclass
class FakeAgent:
    agent_id: str = "solo-1"
    exit_code: int | None = None
    stopping: bool = False


@pytest.fixture(autouse=True)
def short_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(completion, "SETTLE_SECONDS", 0.3)


def watch(*, solo: bool = True, scripted: tuple[str, ...] = ()) -> tuple:
    state, observer, agent = AgentLogState(), FakeObserver(), FakeAgent()
    rules = CompletionRules("solo-1", AGENT, solo, list(scripted))
    return (
        CompletionWatch(
            rules,
            observer,
            {"solo-1": state},
            {"solo-1": agent},
            lambda: None,
            lambda a: f"{a.agent_id} exited",
        ),
        state,
        observer,
        agent,
    )


def turn(state: AgentLogState, *event_ids: str) -> None:
    state.apply(log_record(event="turn_started", event_ids=list(event_ids)))
    state.apply(log_record(event="turn_delivered", event_ids=list(event_ids)))
    state.apply(log_record(event="turn_completed", event_ids=list(event_ids)))


async def test_solo_turn_end_after_settle_with_last_authored_message() -> None:
    w, state, observer, _ = watch()
    observer.events.append({"id": "m1", "pubkey": AGENT, "content": "answer"})
    turn(state, "task")
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await w.wait(10)
    assert result.stop_reason == "turn_end" and result.completion_message_id == "m1"
    assert loop.time() - started >= 0.3


async def test_a_new_turn_inside_the_window_restarts_it() -> None:
    w, state, _, _ = watch()
    turn(state, "task")

    async def late_event() -> None:
        await asyncio.sleep(0.1)
        state.apply(log_record(event="event_queued", event_id="late"))
        w.notify()
        await asyncio.sleep(0.1)
        turn(state, "late")
        w.notify()

    loop = asyncio.get_running_loop()
    started = loop.time()
    waiter = asyncio.create_task(w.wait(10))
    await late_event()
    result = await waiter
    assert result.stop_reason == "turn_end"
    assert loop.time() - started >= 0.5  # 0.2 s of activity, then a full window


async def test_scripted_events_must_be_delivered() -> None:
    w, state, _, _ = watch(scripted=("s1",))
    turn(state, "task")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(w.wait(10), 0.6)
    turn(state, "s1")
    assert (await w.wait(10)).stop_reason == "turn_end"


async def test_done_message_for_teams_and_only_from_the_orchestrator() -> None:
    w, _, observer, _ = watch(solo=False)
    observer.events.append({"id": "w", "pubkey": "cd" * 32, "content": "DONE: worker"})
    observer.events.append({"id": "x", "pubkey": AGENT, "content": " DONE: leading space"})
    observer.events.append({"id": "d", "pubkey": AGENT, "content": "DONE: all good"})
    result = await w.wait(10)
    assert (result.stop_reason, result.completion_message_id) == ("done_message", "d")


async def test_timeout_and_agent_exit() -> None:
    w, _, _, agent = watch(solo=False)
    assert (await w.wait(0.2)).stop_reason == "timeout"
    agent.exit_code = 1
    with pytest.raises(AgentProcessExited, match="solo-1 exited"):
        await w.wait(10)


async def test_pending_retry_blocks_turn_end() -> None:
    w, state, _, _ = watch()
    state.apply(log_record(event="turn_started", event_ids=["task"]))
    state.apply(log_record(event="turn_failed", will_retry=True, event_ids=["task"]))
    assert (await w.wait(0.5)).stop_reason == "timeout"
