"""The races the solo stop rule closes (orchestrator.md §7.11), through the real `run_trial` and
the real relay: a mention reaches buzz-acp's subscription just as the turn ends, and buzz-acp's
event log accounts for it only later, or never.

The fake buzz-acp answers the task in one turn. Before that turn ends, the trial user mentions
the agent again and the fake waits until its own relay subscription has that mention; it ends
the turn, then logs the mention only `HELD_SECONDS` later (a busy event loop, a slow hop), and
handles it as each test says. Every hold is longer than the settle grace, so a stop driven by
a timer after the last turn would come before the fake's log accounts for the mention.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from trial_fakes import FakeAgent, FakeEnvironment, FakeKind, Trial

from orchestra.buzz import BuzzClient
from orchestra.nostr.keys import Keys
from orchestra.trial import completion
from orchestra.trial.context import JobContext

HELD_SECONDS = 1.0
BATCH_WINDOW_SECONDS = 1.0  # BUZZ_ACP_BATCH_WINDOW_MS's default (agent-harness.md §1.5)


class FollowUpMention:
    """The fake buzz-acp; `outcome` is what it finally logs for the follow-up mention:
    `turn` (queued, then delivered in a second turn after the batch window), `event_ignored`,
    `event_dropped`, or `never` (nothing)."""

    def __init__(self, outcome: str) -> None:
        self.outcome = outcome
        self.user: Keys | None = None
        self.follow_up_id: str | None = None

    def setup(self, _kind: FakeKind, ctx: JobContext) -> None:
        self.user = ctx.state.user  # reply-to-thread's trial user is the pinned user

    async def __call__(self, agent: FakeAgent) -> None:
        agent.subscribe()
        mentions = agent.mentions()
        task = await anext(mentions)
        agent.record("event_queued", event_id=task["id"])
        agent.record("turn_started", turn_id="t1", session_id="s1", event_ids=[task["id"]])
        agent.record("turn_delivered", turn_id="t1", event_ids=[task["id"]])
        await agent.post("answered")
        self.follow_up_id = await self._mention_again(agent)
        assert (await anext(mentions))["id"] == self.follow_up_id  # buzz-acp has it now
        agent.record("turn_completed", turn_id="t1", stop_reason="end_turn", usage={})
        await asyncio.sleep(HELD_SECONDS)  # a behaviour of the fake, not synchronisation
        if self.outcome == "turn":
            agent.record("event_queued", event_id=self.follow_up_id)
            await asyncio.sleep(BATCH_WINDOW_SECONDS)
            agent.turn("t2", [self.follow_up_id])
        elif self.outcome != "never":
            agent.record(self.outcome, event_id=self.follow_up_id, reason="author_gate")

    async def _mention_again(self, agent: FakeAgent) -> str:
        assert self.user is not None
        async with BuzzClient.from_keys(agent.env["BUZZ_RELAY_URL"], self.user) as user:
            sent = await user.messages_send(
                channel=agent.env["BUZZ_ACP_CHANNELS"],
                content="one more thing",
                mention=[agent.pubkey],
            )
        return str(sent["event_id"])


def logged(environment: FakeEnvironment) -> list[dict[str, Any]]:
    [agent] = environment.agents
    lines = Path(agent.env["BUZZ_ACP_EVENT_LOG"]).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


async def run(trial: Trial, outcome: str) -> tuple[dict[str, Any], FakeEnvironment, str]:
    fake = FollowUpMention(outcome)
    result, environment = await trial(fake, setup=fake.setup)
    assert fake.follow_up_id is not None
    return result, environment, fake.follow_up_id


async def test_a_mention_in_flight_and_in_the_batch_window_keeps_the_trial_running(
    trial: Trial,
) -> None:
    result, environment, follow_up = await run(trial, "turn")
    assert result["status"] == "scored" and result["stop_reason"] == "turn_end"
    assert result["unaccounted_events"] == []
    turns = [r for r in logged(environment) if r["event"] == "turn_completed"]
    assert [r["turn_id"] for r in turns] == ["t1", "t2"]  # not stopped after the first turn
    delivered = [r for r in logged(environment) if r["event"] == "turn_delivered"]
    assert delivered[-1]["event_ids"] == [follow_up]


@pytest.mark.parametrize("record", ["event_ignored", "event_dropped"])
async def test_a_mention_buzz_acp_ignores_or_drops_ends_the_wait(trial: Trial, record: str) -> None:
    result, environment, follow_up = await run(trial, record)
    assert result["status"] == "scored" and result["stop_reason"] == "turn_end"
    assert result["unaccounted_events"] == []
    assert [r["event_id"] for r in logged(environment) if r["event"] == record] == [follow_up]


async def test_a_mention_never_accounted_for_is_recorded_and_the_trial_still_stops(
    trial: Trial, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(completion, "UNACCOUNTED_LIMIT_SECONDS", 2 * HELD_SECONDS)
    result, environment, follow_up = await run(trial, "never")
    assert result["status"] == "scored" and result["stop_reason"] == "turn_end"
    assert result["unaccounted_events"] == [follow_up]
    log = environment.trial.trial_log.read_text(encoding="utf-8")
    assert f"unaccounted for 2 s after the last turn ended (the stop proceeds): {follow_up}" in log
