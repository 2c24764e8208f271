"""The oracle's team protocol, decided purely from the registration and the request
(orchestrator.md §4.5 "Teams"): the lead delegates by an explicit
mention, the worker runs the solution and calls the lead back, the lead posts `DONE:`."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
from oracle_support import CHANNEL, REQUESTER, TASK_EVENT, TASK_PROMPT

from orchestra.agents.oracle import OracleTeammate, fault_plan_from_env
from orchestra.agents.oracle.decision import (
    Answer,
    ShellTool,
    Turn,
    decide,
    fault_answer,
)
from orchestra.agents.oracle.faults import OracleConfigError

SHELL = ShellTool("buzz_dev_mcp__shell", "command", "timeout_secs", 280)
LEAD = OracleTeammate(agent_id="lead-1", kind="orchestrator", pubkey="aa" * 32)
WORKER_1 = OracleTeammate(agent_id="worker-1", kind="worker", pubkey="b1" * 32)
WORKER_2 = OracleTeammate(agent_id="worker-2", kind="worker", pubkey="b2" * 32)
TEAM = (LEAD, WORKER_1, WORKER_2)


def prompt_from(sender: OracleTeammate | None) -> str:
    """The task prompt, or (sender given) the same event block authored by a teammate."""
    if sender is None:
        return TASK_PROMPT
    return TASK_PROMPT.replace(
        f"From: Trial User (npub: npub1xyz, hex: {REQUESTER})",
        f"From: {sender.agent_id} (npub: npub1xyz, hex: {sender.pubkey})",
    )


def turn(agent: OracleTeammate, history: list[dict[str, Any]], **fields: Any) -> Turn:
    values: dict[str, Any] = {
        "agent_id": agent.agent_id,
        "request_number": 4,
        "channel_id": CHANNEL,
        "task_event_id": TASK_EVENT,
        "requester_pubkey": REQUESTER,
        "requester_name": "Trial User",
        "solve_path": "/solution/solve.sh",
        "solve_done": False,
        "messages": history,
        "senders": (REQUESTER,),
    }
    values.update(fields)
    return Turn(**values)


def user_message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def called(answer: Answer, exit_code: int = 0) -> list[dict[str, Any]]:
    """The assistant message of `answer` and the shell's result for it."""
    (call,) = answer.message["tool_calls"]
    result = {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": f"ok\n[exit code: {exit_code}]",
    }
    return [answer.message, result]


def command_of(answer: Answer) -> str:
    assert answer.decision == "tool_call", answer
    (call,) = answer.message["tool_calls"]
    arguments = json.loads(call["function"]["arguments"])
    assert arguments["timeout_secs"] == 280
    command: str = arguments["command"]
    return command


def posted(command: str) -> tuple[str, dict[str, str]]:
    """The content and the `buzz messages send` options of a post command."""
    printed, _, send = command.partition(" | ")
    content = shlex.split(printed)[2]
    words = shlex.split(send)
    assert words[:3] == ["buzz", "messages", "send"], command
    options = dict(zip(words[3::2], words[4::2], strict=True))
    return content, options


def test_the_lead_delegates_the_task_to_the_first_worker_by_an_explicit_mention() -> None:
    history = [user_message(TASK_PROMPT)]
    answer = decide(SHELL, turn(LEAD, history), TEAM)
    assert answer.message["tool_calls"][0]["id"] == "oracle-delegate-lead-1-4"
    content, options = posted(command_of(answer))
    assert content.startswith("@worker-1 ")
    assert options == {
        "--channel": CHANNEL,
        "--reply-to": TASK_EVENT,
        "--mention": WORKER_1.pubkey,
        "--content": "-",
    }
    # posted: the turn ends; a failed post is issued again, at most three times in a turn
    assert decide(SHELL, turn(LEAD, history + called(answer)), TEAM).reason == "delegate_posted"
    failed = history + called(answer, exit_code=1)
    again = decide(SHELL, turn(LEAD, failed), TEAM)
    assert again.decision == "tool_call"
    capped = failed + called(again, 1) + called(again, 1)
    assert decide(SHELL, turn(LEAD, capped), TEAM).reason == "delegate_cap_reached"


def test_the_lead_woken_by_a_worker_posts_done_to_the_user() -> None:
    earlier = [user_message(TASK_PROMPT)]
    delegated = decide(SHELL, turn(LEAD, earlier), TEAM)
    # a warm session: the earlier turn's delegation is in the history, the callback is new
    history = earlier + called(delegated) + [user_message(prompt_from(WORKER_2))]
    answer = decide(SHELL, turn(LEAD, history, senders=(WORKER_2.pubkey,)), TEAM)
    assert answer.message["tool_calls"][0]["id"] == "oracle-done-lead-1-4"
    content, options = posted(command_of(answer))
    assert content.startswith("DONE: worker-2 ")
    assert (options["--mention"], options["--reply-to"]) == (REQUESTER, TASK_EVENT)
    final = decide(SHELL, turn(LEAD, history + called(answer), senders=(WORKER_2.pubkey,)), TEAM)
    assert (final.decision, final.reason, final.message["content"]) == ("final", "done_posted", "")


def test_only_a_registered_worker_as_sender_makes_the_lead_report() -> None:
    """Senders come from header lines; someone else's pubkey (the user, a stranger) is a task."""
    history = [user_message(TASK_PROMPT)]
    for senders in ((REQUESTER,), ("ee" * 32,), ()):
        answer = decide(SHELL, turn(LEAD, history, senders=senders), TEAM)
        assert answer.message["tool_calls"][0]["id"].startswith("oracle-delegate-"), senders


def test_the_worker_runs_the_solution_then_calls_the_lead_back() -> None:
    history = [user_message(prompt_from(LEAD))]
    solve = decide(SHELL, turn(WORKER_1, history, senders=(LEAD.pubkey,)), TEAM)
    assert solve.message["tool_calls"][0]["id"] == "oracle-solve-worker-1-1"
    assert command_of(solve) == (
        f"BUZZ_CHANNEL_ID={CHANNEL} BUZZ_REPLY_TO={TASK_EVENT} BUZZ_REQUESTER_PUBKEY={REQUESTER} "
        "BUZZ_REQUESTER_NAME='Trial User' bash /solution/solve.sh"
    )
    solved = history + called(solve)
    callback = decide(SHELL, turn(WORKER_1, solved, solve_done=True), TEAM)
    assert callback.message["tool_calls"][0]["id"] == "oracle-callback-worker-1-4"
    content, options = posted(command_of(callback))
    assert content.startswith("DONE: @lead-1 the solution ran to the end")
    assert (options["--mention"], options["--reply-to"]) == (LEAD.pubkey, TASK_EVENT)
    final = decide(SHELL, turn(WORKER_1, solved + called(callback), solve_done=True), TEAM)
    assert (final.decision, final.reason) == ("final", "callback_posted")


def test_a_worker_whose_solution_keeps_failing_reports_it() -> None:
    history = [user_message(prompt_from(LEAD))]
    for _ in range(3):
        solve = decide(SHELL, turn(WORKER_1, history), TEAM)
        assert solve.message["tool_calls"][0]["id"].startswith("oracle-solve-")
        history += called(solve, exit_code=1)
    callback = decide(SHELL, turn(WORKER_1, history), TEAM)
    content, _ = posted(command_of(callback))
    assert content.startswith("DONE: @lead-1 the solution failed")


def test_a_roster_without_workers_follows_the_solo_protocol() -> None:
    solo = LEAD.model_copy(update={"agent_id": "solo-1"})
    history = [user_message(TASK_PROMPT)]
    answer = decide(SHELL, turn(solo, history), (solo,))
    assert answer.message["tool_calls"][0]["id"] == "oracle-solve-solo-1-1"
    assert decide(SHELL, turn(solo, history, solve_done=True), (solo,)).reason == "solve_done"


@pytest.mark.parametrize("count", [1, 3])
def test_the_silent_fault_ends_the_turn_having_done_nothing(count: int) -> None:
    plan = fault_plan_from_env({"ORACLE_FAULTS": f"silent:{count}"})
    assert [plan.fault_for(n) for n in range(1, count + 2)] == ["silent"] * count + [None]
    answer = fault_answer("silent", SHELL, "worker-1", 1)
    assert (answer.finish_reason, answer.message) == ("stop", {"role": "assistant", "content": ""})


def test_a_star_count_takes_every_later_request_and_must_come_last() -> None:
    """`silent:*`, the built-in `null` endpoint: every request is an empty end of turn."""
    plan = fault_plan_from_env({"ORACLE_FAULTS": "429:1,silent:*"})
    assert [plan.fault_for(n) for n in (1, 2, 50, 10_000)] == ["429", "silent", "silent", "silent"]
    with pytest.raises(OracleConfigError, match=r'"500:1" after an item with N "\*"'):
        fault_plan_from_env({"ORACLE_FAULTS": "silent:*,500:1"})
