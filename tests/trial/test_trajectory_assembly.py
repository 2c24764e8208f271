"""Assembling an agent's ATIF trajectory from its side file (orchestrator.md §7.16)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from orchestra.agents.trajectory.atif import AgentInfo, Metrics, ToolCall, Trajectory
from orchestra.agents.trajectory.sidefile import (
    AgentLine,
    SideFileWriter,
    SystemLine,
    ToolResultLine,
    UserLine,
)
from orchestra.paths import TrialPaths
from orchestra.trial.trajectories import (
    NO_RESULT,
    AgentTrajectorySource,
    assemble,
    write_trajectories,
)

TS = "2026-11-29T17:42:03.123456Z"
PRICE = SimpleNamespace(
    input_per_million_usd=1.0,
    cached_input_per_million_usd=0.1,
    output_per_million_usd=4.0,
    cache_read_rate=0.0,
    cache_write_per_million_usd=None,
)
AGENT = AgentInfo(name="buzz-agent", version="1.2.3", model_name="m", tool_definitions=[])
FALLBACK = AgentInfo(name="buzz-agent", version="unknown", model_name="endpoint")


def system(session: str) -> SystemLine:
    return SystemLine(ts=TS, session_id=session, text=f"system of {session}", agent=AGENT)


def user(session: str, text: str) -> UserLine:
    return UserLine(ts=TS, session_id=session, text=text)


def response(session: str, *call_ids: str, text: str = "", tokens: int = 100) -> AgentLine:
    return AgentLine(
        ts=TS,
        session_id=session,
        text=text,
        tool_calls=[
            ToolCall(tool_call_id=c, function_name="shell", arguments={"command": c})
            for c in call_ids
        ],
        usage=Metrics(prompt_tokens=tokens, completion_tokens=10, cached_tokens=tokens // 2),
    )


def result(session: str, call_id: str, content: str, is_error: bool = False) -> ToolResultLine:
    return ToolResultLine(
        ts=TS, session_id=session, call_id=call_id, content=content, is_error=is_error
    )


def results_of(trajectory: Trajectory, step_id: int) -> list[tuple[str, str]]:
    observation = trajectory.steps[step_id - 1].observation
    assert observation is not None
    return [(r.source_call_id, r.content) for r in observation.results]


def test_results_join_the_call_of_their_session_in_call_order() -> None:
    lines = [
        system("s1"),
        user("s1", "first"),
        system("s2"),
        response("s1", "call_1", "call_2", text="two calls"),
        response("s2", "call_1"),  # the same id in another session
        result("s2", "call_1", "s2 result"),
        result("s1", "call_2", "ERROR: second", is_error=True),
        result("s1", "call_1", "first"),
        response("s1", text="done", tokens=300),
    ]
    trajectory, notes = assemble(lines, session_id="t:a", price=PRICE, fallback=FALLBACK)
    assert trajectory is not None and notes == []
    assert [s.source for s in trajectory.steps] == [
        "system", "user", "system", "agent", "agent", "agent"
    ]  # fmt: skip
    assert results_of(trajectory, 4) == [("call_1", "first"), ("call_2", "ERROR: second")]
    assert results_of(trajectory, 5) == [("call_1", "s2 result")]
    assert trajectory.agent == AGENT and trajectory.session_id == "t:a"
    metrics = trajectory.steps[5].metrics
    assert metrics is not None
    assert metrics.cost_usd == (150 * 1.0 + 150 * 0.1 + 10 * 4.0) / 1_000_000
    totals = trajectory.final_metrics
    assert (totals.total_prompt_tokens, totals.total_cached_tokens) == (500, 250)
    assert totals.total_steps == 6


def test_calls_left_without_a_result_are_marked_and_stray_results_dropped() -> None:
    lines = [
        user("s1", "go"),
        response("s1", "call_1"),  # cancelled turn: no result ...
        user("s1", "again"),
        response("s1", "call_1"),  # ... and the id comes back in the next turn
        result("s1", "call_1", "answered"),
        result("s1", "call_9", "nobody asked"),
        response("s1", "call_2"),  # the agent was killed while this ran
    ]
    trajectory, notes = assemble(lines, session_id="t:a", price=PRICE, fallback=FALLBACK)
    assert trajectory is not None
    assert results_of(trajectory, 2) == [("call_1", NO_RESULT)]
    assert results_of(trajectory, 4) == [("call_1", "answered")]
    assert results_of(trajectory, 5) == [("call_2", NO_RESULT)]
    assert trajectory.agent == FALLBACK  # no system step survived
    assert notes == [
        "tool result call_9 answers no open tool call: skipped",
        "2 tool call(s) without a result, marked as such",
    ]


def test_a_refusal_keeps_its_stop_reason_in_the_step() -> None:
    refused = response("s1", text="I can't help with that.").model_copy(
        update={"stop_reason": "refusal"}
    )
    lines = [user("s1", "do something bad"), refused, user("s1", "fine"), response("s1", text="ok")]
    trajectory, _ = assemble(lines, session_id="t:a", price=PRICE, fallback=FALLBACK)
    assert trajectory is not None
    document = trajectory.to_document()
    assert [step.get("extra") for step in document["steps"]] == [
        None, {"stop_reason": "refusal"}, None, None
    ]  # fmt: skip
    assert document["steps"][1]["message"] == "I can't help with that."


def test_no_lines_make_no_trajectory() -> None:
    assert assemble([], session_id="t:a", price=PRICE, fallback=FALLBACK) == (
        None,
        ["no steps recorded"],
    )


def test_each_agent_with_a_side_file_gets_its_document(tmp_path: Path) -> None:
    paths = TrialPaths(tmp_path / "trial")
    paths.buzz_dir.mkdir(parents=True)
    writer = SideFileWriter(str(paths.trajectory_log("solo-1")))
    for line in (system("s1"), user("s1", "hi"), response("s1", "call_1")):
        writer.write(line)
    writer.close()
    with paths.trajectory_log("solo-1").open("ab") as handle:
        handle.write(b'{"kind": "tool_res')  # killed in the middle of the result line
    paths.trajectory_log("empty-1").write_text("")
    sources = [
        AgentTrajectorySource(agent_id=agent_id, price=PRICE, fallback=FALLBACK)
        for agent_id in ("solo-1", "empty-1", "never-started-1")
    ]
    written, log = write_trajectories(paths, "trial-id", sources)
    assert written == {"solo-1": "agent/buzz/solo-1.trajectory.json"}
    document = json.loads((paths.root / written["solo-1"]).read_text())
    trajectory = Trajectory.model_validate(document)
    assert trajectory.session_id == "trial-id:solo-1"
    assert results_of(trajectory, 3) == [("call_1", NO_RESULT)]
    assert log == [
        "solo-1.trajectory.jsonl: line 4 dropped: incomplete (18 bytes, no newline; the agent "
        "stopped while writing it)",
        "solo-1.trajectory.jsonl: 1 tool call(s) without a result, marked as such",
        "empty-1.trajectory.jsonl: no steps recorded",
    ]
    assert not paths.trajectory("empty-1").exists()
