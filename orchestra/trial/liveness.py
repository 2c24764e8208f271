"""Liveness flags (orchestrator.md §10.3): per agent seat from its ACP event log, per trial
from its seats, its stop and its accounting.

A trial's `no-tool-call` and `text-only` hold when they hold for every seat (the team never
acted); `round-capped`, `invalid-output` and `looping` when they hold for any seat."""

from __future__ import annotations

from collections.abc import Mapping

from orchestra.documents.enums import Accounting, Flag, StopReason
from orchestra.trial.eventlog import AgentLogState

#: Consecutive identical tool calls (name and arguments) that make a seat `looping`.
LOOP_CALLS = 5
#: The ACP stop reason of a turn ended by the harness's per-turn request cap.
ROUND_CAP = "max_turn_requests"
_EVERY_SEAT = (Flag.NO_TOOL_CALL, Flag.TEXT_ONLY)
_ANY_SEAT = (Flag.ROUND_CAPPED, Flag.INVALID_OUTPUT, Flag.LOOPING)


def seat_flags(state: AgentLogState, messages: int | None) -> list[Flag]:
    """One seat's flags; `messages`: what it authored in the exported transcript (None: no
    transcript, so posting is judged by its tool calls)."""
    flags: set[Flag] = set()
    if not state.ran_turns:
        return []
    if state.tool_calls == 0:
        flags.add(Flag.NO_TOOL_CALL)
    posted = bool(messages) if messages is not None else state.tool_calls > 0
    if state.text_replies and not posted:
        flags.add(Flag.TEXT_ONLY)
    if state.last_acp_stop == ROUND_CAP:
        flags.add(Flag.ROUND_CAPPED)
    # the event log records buzz-agent's `invalid_output` stopDetail as the turn's stop
    # reason (agent-harness.md §2.4), as the trial's stop reason names it
    if state.turn_stops.get(StopReason.INVALID_OUTPUT.value):
        flags.add(Flag.INVALID_OUTPUT)
    if state.longest_repeat >= LOOP_CALLS:
        flags.add(Flag.LOOPING)
    return ordered(flags)


def trial_flags(
    seats: Mapping[str, list[Flag]],
    stop_reason: StopReason | None,
    accounting: Accounting,
    ran_turns: bool,
) -> list[Flag]:
    """The trial's flags from its seats' (`seats`: those that ran turns), how the agent
    phase stopped and how its tokens were counted."""
    flags = {flag for flag in _ANY_SEAT if any(flag in seat for seat in seats.values())}
    if seats:
        flags.update(flag for flag in _EVERY_SEAT if all(flag in seat for seat in seats.values()))
    if stop_reason is StopReason.TIMEOUT:
        flags.add(Flag.TIMEOUT)
    if ran_turns and accounting is not Accounting.EVENT_LOG:
        flags.add(Flag.UNPRICED)
    return ordered(flags)


def ordered(flags: set[Flag]) -> list[Flag]:
    return [flag for flag in Flag if flag in flags]
