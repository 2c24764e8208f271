"""Live progress for slow models (orchestrator.md §7.11 "Liveness"): while the agent phase
runs, what each trial's agents are doing (turns in flight, tokens so far, seconds since their
last event), and a watchdog line naming an agent that has been silent longer than
`SILENCE_SECONDS` with no request outstanding (in `trial.log` and `job.log`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from orchestra.trial.context import JobContext
from orchestra.trial.eventlog import AgentLogState
from orchestra.trial.state import TrialState

#: An agent with no turn in flight and no event for this long is named by the watchdog.
SILENCE_SECONDS = 120.0
#: How often the running trial's activity is sampled (a poll of state the event-log
#: followers keep, not a synchronisation).
SAMPLE_SECONDS = 2.0


def activity_text(states: Mapping[str, AgentLogState], now: float) -> str:
    """`1 in flight, 12.3k tokens, last event 14 s ago` over the trial's agents."""
    in_flight = sum(state.in_flight for state in states.values())
    tokens = sum(
        totals[0] + totals[2] for totals in (state.usage_totals() for state in states.values())
    )
    seen = [state.last_event_at for state in states.values() if state.last_event_at is not None]
    last = f"last event {now - max(seen):.0f} s ago" if seen else "no event yet"
    return f"{in_flight} in flight, {tokens / 1000:.1f}k tokens, {last}"


def silent_agents(
    states: Mapping[str, AgentLogState], now: float, threshold: float = SILENCE_SECONDS
) -> dict[str, float]:
    """Agent id -> seconds silent, for the agents with no turn in flight and no event for at
    least `threshold` seconds."""
    return {
        agent_id: now - state.last_event_at
        for agent_id, state in states.items()
        if state.in_flight == 0
        and state.last_event_at is not None
        and now - state.last_event_at >= threshold
    }


def watchdog_line(agent_id: str, seconds: float) -> str:
    return f"watchdog: {agent_id} silent for {seconds:.0f} s with no request outstanding"


async def watch_liveness(state: TrialState, ctx: JobContext) -> None:
    """Runs until cancelled with the agent phase: reports the activity to the progress and
    names each agent that falls silent, once per silence."""
    named: set[str] = set()
    while True:
        await asyncio.sleep(SAMPLE_SECONDS)
        states, now = state.log_states(), time.monotonic()
        ctx.on_activity(state.name, activity_text(states, now))
        silent = silent_agents(states, now)
        named &= set(silent)  # an agent that spoke again is named again at its next silence
        for agent_id, seconds in silent.items():
            if agent_id not in named:
                named.add(agent_id)
                line = watchdog_line(agent_id, seconds)
                state.recorder.log(line)
                ctx.log(f"{state.name}: {line}")
