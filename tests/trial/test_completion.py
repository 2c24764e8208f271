"""Completion rules of orchestrator.md §7.11 on live-updated state (short settle grace)."""

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from documents_support import log_record

from orchestra.trial import completion
from orchestra.trial.completion import AgentProcessExited, CompletionRules, CompletionWatch
from orchestra.trial.eventlog import AgentLogState
from orchestra.trial.observer import ChannelObserver

AGENT = "ab" * 32
USER = "cd" * 32
CHANNEL = "6f1c2d3e-0000-4000-8000-000000000001"
GRACE = 0.3


@dataclass
class FakeAgent:
    agent_id: str = "solo-1"
    exit_code: int | None = None
    stopping: bool = False


@dataclass
class Trial:
    watch: CompletionWatch
    state: AgentLogState
    observer: ChannelObserver
    agent: FakeAgent

    def log(self, event: str, **fields: Any) -> None:
        """A record in the agent's event log, as the follower applies it."""
        self.state.apply(log_record(event=event, **fields))
        self.watch.notify()

    def turn(self, *event_ids: str) -> None:
        self.log("turn_started", event_ids=list(event_ids))
        self.log("turn_delivered", event_ids=list(event_ids))
        self.log("turn_completed", event_ids=list(event_ids))

    def seen(
        self,
        event_id: str,
        *,
        author: str = USER,
        kind: int = 9,
        mentions: tuple[str, ...] = (AGENT,),
        channel: str = CHANNEL,
        content: str = "",
    ) -> None:
        """An event the trial's channel subscription received."""
        event_tags = [["h", channel], *(["p", pubkey] for pubkey in mentions)]
        self.observer.store(
            {"id": event_id, "pubkey": author, "kind": kind, "tags": event_tags, "content": content}
        )


def trial(
    *, solo: bool = True, scripted: tuple[str, ...] = (), unawaited: tuple[str, ...] = ()
) -> Trial:
    """`scripted`: scripted events that p-tag the agent; `unawaited`: ones that do not."""
    state, agent = AgentLogState(), FakeAgent()
    changed = asyncio.Event()
    observer = ChannelObserver(None, CHANNEL, 0, changed.set)
    watch = CompletionWatch(
        CompletionRules(
            "solo-1", AGENT, solo, [*scripted, *unawaited], list(scripted), settle_seconds=GRACE
        ),
        observer,
        {"solo-1": state},
        {"solo-1": agent},
        lambda: None,
        lambda a: f"{a.agent_id} exited",
        changed,
    )
    return Trial(watch, state, observer, agent)


async def still_waiting(t: Trial, seconds: float) -> None:
    """The watch does not stop within `seconds` (well beyond the grace)."""
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(t.watch.wait(60), seconds)


async def test_solo_turn_end_after_the_grace_with_last_authored_message() -> None:
    t = trial()
    t.seen("task")
    t.seen("m1", author=AGENT, mentions=(), content="answer")
    t.turn("task")
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await t.watch.wait(10)
    assert (result.stop_reason, result.completion_message_id) == ("turn_end", "m1")
    assert result.unaccounted_events == ()
    assert loop.time() - started >= GRACE


@pytest.mark.parametrize("ended", ["refusal", "context_exhausted"])
async def test_a_solo_turn_end_names_a_refusal_or_an_exhausted_context(ended: str) -> None:
    t = trial()
    t.seen("task")
    t.log("turn_started", event_ids=["task"])
    t.log("turn_delivered", event_ids=["task"])
    t.log("turn_completed", event_ids=["task"], stop_reason=ended)
    result = await t.watch.wait(10)
    assert result.stop_reason == ended


async def test_a_new_turn_inside_the_grace_restarts_it() -> None:
    t = trial()
    t.seen("task")
    t.turn("task")

    async def late_event() -> None:
        await asyncio.sleep(0.1)
        t.seen("late")
        t.log("event_queued", event_id="late")
        await asyncio.sleep(0.1)
        t.turn("late")

    loop = asyncio.get_running_loop()
    started = loop.time()
    waiter = asyncio.create_task(t.watch.wait(10))
    await late_event()
    result = await waiter
    assert result.stop_reason == "turn_end"
    assert loop.time() - started >= 0.2 + GRACE  # 0.2 s of activity, then a whole grace


async def test_a_mention_the_agent_has_not_seen_yet_keeps_the_trial_running() -> None:
    """A turn ended while a mention is still travelling from the relay to buzz-acp: the trial's
    subscription saw it, the agent's log says nothing about it yet."""
    t = trial()
    t.seen("task")
    t.turn("task")
    t.seen("mention")
    await still_waiting(t, 4 * GRACE)
    t.log("event_queued", event_id="mention")  # buzz-acp got it: its batch window opens
    await still_waiting(t, 4 * GRACE)
    t.turn("mention")
    result = await t.watch.wait(10)
    assert result.stop_reason == "turn_end" and result.unaccounted_events == ()


@pytest.mark.parametrize("record", ["event_ignored", "event_dropped"])
async def test_a_mention_buzz_acp_ignores_or_drops_is_accounted_for(record: str) -> None:
    t = trial()
    t.seen("task")
    t.turn("task")
    t.seen("mention")
    await still_waiting(t, 4 * GRACE)
    t.log(record, event_id="mention", reason="author_gate")
    result = await t.watch.wait(10)
    assert result.stop_reason == "turn_end" and result.unaccounted_events == ()


async def test_events_that_cannot_wake_the_agent_are_not_waited_for() -> None:
    t = trial()
    t.seen("task")
    t.seen("own", author=AGENT)  # self-authored, even if it p-tags the agent
    t.seen("plain", mentions=())  # no p tag for the agent
    t.seen("other", mentions=("ef" * 32,))
    t.seen("reaction", kind=40002)
    t.seen("elsewhere", channel="6f1c2d3e-0000-4000-8000-000000000002")
    t.turn("task")
    result = await t.watch.wait(10)
    assert result.stop_reason == "turn_end" and result.unaccounted_events == ()


@pytest.fixture
def short_limit(monkeypatch: pytest.MonkeyPatch) -> float:
    """The 10 s unaccounted-events limit of §7.11, shortened to 1 s for the tests."""
    monkeypatch.setattr(completion, "UNACCOUNTED_LIMIT_SECONDS", 1.0)
    return 1.0


async def test_a_mention_never_accounted_for_is_recorded_and_the_stop_proceeds(
    short_limit: float,
) -> None:
    t = trial()
    t.seen("task")
    t.turn("task")
    t.seen("lost-1")
    t.seen("lost-2")
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await t.watch.wait(10)
    assert result.stop_reason == "turn_end"
    assert result.unaccounted_events == ("lost-1", "lost-2")
    assert loop.time() - started >= short_limit


async def test_the_unaccounted_limit_runs_from_the_last_turn_end(short_limit: float) -> None:
    t = trial()
    t.seen("task")
    t.seen("lost")
    t.turn("task")
    waiter = asyncio.create_task(t.watch.wait(10))
    await asyncio.sleep(0.6)
    t.seen("second")
    t.log("event_queued", event_id="second")
    t.turn("second")  # the last turn ends 0.6 s in: the limit starts again from here
    loop = asyncio.get_running_loop()
    turn_ended = loop.time()
    result = await waiter
    assert result.unaccounted_events == ("lost",)
    assert loop.time() - turn_ended >= short_limit


async def test_scripted_events_must_be_delivered() -> None:
    t = trial(scripted=("s1",))
    t.seen("task")
    t.turn("task")
    await still_waiting(t, 2 * GRACE)
    t.seen("s1")
    t.turn("s1")
    assert (await t.watch.wait(10)).stop_reason == "turn_end"


async def test_a_scripted_event_that_does_not_tag_the_agent_counts_as_delivered() -> None:
    """A scripted reply meant to be found by polling never wakes the agent: the solo stop
    follows the agent's turns, not the event's delivery (§7.11)."""
    t = trial(unawaited=("bot-reply",))
    t.seen("task")
    t.seen("bot-reply", author="ef" * 32, mentions=())
    t.seen("m1", author=AGENT, mentions=(), content="the build is 4812")
    t.turn("task")
    result = await t.watch.wait(10)
    assert (result.stop_reason, result.completion_message_id) == ("turn_end", "m1")


async def test_done_message_for_teams_and_only_from_the_orchestrator() -> None:
    t = trial(solo=False)
    t.seen("w", author="ef" * 32, mentions=(), content="DONE: worker")
    t.seen("x", author=AGENT, mentions=(), content=" DONE: leading space")
    t.seen("d", author=AGENT, mentions=(), content="DONE: all good")
    result = await t.watch.wait(10)
    assert (result.stop_reason, result.completion_message_id) == ("done_message", "d")


async def test_a_team_is_not_stopped_by_a_quiet_orchestrator() -> None:
    t = trial(solo=False)
    t.seen("task")
    t.turn("task")
    assert (await t.watch.wait(4 * GRACE)).stop_reason == "timeout"


async def test_timeout_and_agent_exit() -> None:
    t = trial(solo=False)
    assert (await t.watch.wait(0.2)).stop_reason == "timeout"
    t.agent.exit_code = 1
    with pytest.raises(AgentProcessExited, match="solo-1 exited"):
        await t.watch.wait(10)


async def test_pending_retry_blocks_turn_end() -> None:
    t = trial()
    t.seen("task")
    t.log("turn_started", event_ids=["task"])
    t.log("turn_failed", will_retry=True, event_ids=["task"])
    assert (await t.watch.wait(4 * GRACE)).stop_reason == "timeout"


async def test_a_cancellation_that_comes_with_a_change_is_not_lost() -> None:
    """The stack fails (`during` cancels the agent phase) just as the agent's log changes: on
    Python 3.11 `asyncio.wait_for` returns the inner result when both arrive together and the
    cancellation is gone, so the watch used to keep waiting for a turn until the agent timeout
    (a trial in flight outlived its outage: tests/stack/test_stack_faults.py hung in CI)."""
    t = trial()
    t.seen("task")
    waiter = asyncio.create_task(t.watch.wait(60))
    await asyncio.sleep(0)  # the watch now waits for a change
    t.watch.notify()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiter, 5)


async def test_a_solo_agent_whose_turn_failed_does_not_stop_with_turn_end() -> None:
    """An agent that never finished a turn (its only turn failed and was given
    up) stopped the trial with `turn_end`; the stop reason says the turn failed."""
    t = trial()
    t.seen("task")
    t.log("turn_started", event_ids=["task"])
    t.log("turn_delivered", event_ids=["task"])
    t.log("turn_failed", will_retry=False, event_ids=["task"], error="HTTP 500")
    result = await t.watch.wait(10)
    assert result.stop_reason == "turn_failed"


async def test_a_turn_that_failed_then_succeeded_on_the_next_mention_is_a_turn_end() -> None:
    t = trial()
    t.seen("task")
    t.log("turn_started", event_ids=["task"])
    t.log("turn_failed", will_retry=False, event_ids=["task"], error="HTTP 500")
    t.seen("again")
    t.turn("again")
    result = await t.watch.wait(10)
    assert result.stop_reason == "turn_end"


@pytest.mark.parametrize("solo", [True, False])
async def test_no_rule_holds_while_a_scripted_message_is_still_to_be_posted(solo: bool) -> None:
    """§7.11: a delayed scripted message (a bot's late reply) keeps the trial running, for the
    solo rules and the DONE: message alike; once it is posted, the rule holds."""
    t = trial(solo=solo, unawaited=("bot-reply",))
    pending = [True]
    t.watch.scripted_pending = lambda: pending[0]
    t.seen("task")
    t.seen("done", author=AGENT, mentions=(), content="DONE: nothing came")
    t.turn("task")
    await still_waiting(t, 3 * GRACE)
    pending[0] = False
    t.seen("bot-reply", author=USER, mentions=())
    result = await t.watch.wait(10)
    expected = ("turn_end", "done") if solo else ("done_message", "done")
    assert (result.stop_reason, result.completion_message_id) == expected
