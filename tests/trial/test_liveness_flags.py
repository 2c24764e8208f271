"""Liveness flags from the agents' ACP event logs (orchestrator.md §10.3): per seat, then per
trial from its seats, its stop and its accounting."""

from documents_support import log_record

from orchestra.documents.enums import Accounting, Flag, StopReason
from orchestra.trial.eventlog import AgentLogState
from orchestra.trial.liveness import LOOP_CALLS, seat_flags, trial_flags


def turn(*middle: dict, stop: str = "end_turn", calls: int = 0) -> list[dict]:
    """One turn's records: started, `middle`, completed with `stop` and the session's usage."""
    usage = {"session": {"input_tokens": 100, "output_tokens": 5, "llm_calls": calls}}
    return [
        {"event": "turn_started", "turn_id": "t", "session_id": "s"},
        *middle,
        {"event": "turn_completed", "turn_id": "t", "session_id": "s", "stop_reason": stop,
         "usage": usage},
    ]  # fmt: skip


def call(call_id: str, title: str) -> list[dict]:
    """A tool call as the ACP client logs it: started, then its update without a title."""
    return [
        {"event": "tool_call", "tool_call_id": call_id, "title": title, "status": "in_progress"},
        {"event": "tool_call", "tool_call_id": call_id, "status": "completed"},
    ]


def fold(*records: dict) -> AgentLogState:
    state = AgentLogState()
    for record in records:
        state.apply(log_record(**record))
    return state


TEXT = {"event": "agent_message", "text": "Please provide the bash command you want to run."}


def test_a_seat_that_only_wrote_text_never_called_a_tool_and_posted_nothing() -> None:
    state = fold(*turn(TEXT, calls=1))
    assert (state.tool_calls, state.text_replies, state.requests) == (0, 1, 1)
    assert seat_flags(state, messages=0) == [Flag.NO_TOOL_CALL, Flag.TEXT_ONLY]
    assert seat_flags(state, messages=None) == [Flag.NO_TOOL_CALL, Flag.TEXT_ONLY]
    silent = fold(*turn(calls=1))  # an empty end of turn: no text either
    assert seat_flags(silent, messages=0) == [Flag.NO_TOOL_CALL]
    assert seat_flags(AgentLogState(), messages=None) == []  # never ran a turn: nothing to say


def test_the_same_call_five_times_in_a_row_is_looping_and_four_is_not() -> None:
    echo = [
        record
        for n in range(LOOP_CALLS)
        for record in call(f"c{n}", 'shell: {"command": "echo 30"}')
    ]
    looping = fold(*turn(*echo, calls=LOOP_CALLS))
    assert (looping.tool_calls, looping.longest_repeat) == (LOOP_CALLS, LOOP_CALLS)
    assert seat_flags(looping, messages=1) == [Flag.LOOPING]
    broken = [*echo[: 2 * (LOOP_CALLS - 1)], *call("other", 'shell: {"command": "ls"}'), *echo[-2:]]
    assert seat_flags(fold(*turn(*broken)), messages=1) == []


def test_round_cap_then_silence_and_invalid_output_are_read_from_the_turn_stops() -> None:
    capped = fold(*turn(*call("a", "shell: x"), stop="max_turn_requests"))
    assert seat_flags(capped, messages=1) == [Flag.ROUND_CAPPED]
    recovered = fold(*turn(stop="max_turn_requests"), *turn(*call("a", "shell: x")))
    assert Flag.ROUND_CAPPED not in seat_flags(recovered, messages=1)
    invalid = fold(*turn(stop="invalid_output"), *turn(*call("a", "shell: x")))
    assert seat_flags(invalid, messages=1) == [Flag.INVALID_OUTPUT]


def test_a_trial_never_acted_only_when_no_seat_did() -> None:
    idle, acting = [Flag.NO_TOOL_CALL, Flag.TEXT_ONLY], [Flag.LOOPING]
    team = trial_flags({"lead-1": idle, "worker-1": acting}, StopReason.TURN_END,
                       Accounting.EVENT_LOG, ran_turns=True)  # fmt: skip
    assert team == [Flag.LOOPING]
    solo = trial_flags(
        {"lead-1": idle}, StopReason.TIMEOUT, Accounting.UNRECONCILED, ran_turns=True
    )
    assert solo == [Flag.NO_TOOL_CALL, Flag.TEXT_ONLY, Flag.TIMEOUT, Flag.UNPRICED]
    # no agent ran a turn (an early error): nothing was unpriced, nobody failed to act
    assert trial_flags({}, None, Accounting.UNAVAILABLE, ran_turns=False) == []
