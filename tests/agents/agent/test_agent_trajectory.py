"""buzz-agent writes its trajectory side file as it works (agent-harness.md §2.13): a real
buzz-agent over ACP against the scripted fake provider, read back and assembled as the
orchestrator does it (orchestrator.md §7.16)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from types import SimpleNamespace

from agent_support import make_fifo, read_fifo, wait_for_exit
from fake_llm import Reply, chat_text, chat_tool_call, chat_tool_calls, chat_usage

from orchestra.agents.agent.trajectory import (
    TRAJECTORY_CUT_MARKER,
    TRAJECTORY_RESULT_LIMIT,
    TrajectoryRecorder,
)
from orchestra.agents.trajectory.atif import AgentInfo, Trajectory
from orchestra.agents.trajectory.sidefile import ToolResultLine, read_side_file
from orchestra.processes import descendants, signal_tree, wait_gone
from orchestra.trial.trajectories import NO_RESULT, assemble

SHELL = "buzz_dev_mcp__shell"
PRICE = SimpleNamespace(
    input_per_million_usd=2.0,
    cached_input_per_million_usd=0.5,
    output_per_million_usd=8.0,
    cache_read_rate=0.0,
    cache_write_per_million_usd=None,
)
FALLBACK = AgentInfo(name="buzz-agent", version="unknown", model_name="fake-model")


def assembled(path: Path) -> tuple[Trajectory, list[str]]:
    side = read_side_file(path)
    trajectory, notes = assemble(side.lines, session_id="t:a", price=PRICE, fallback=FALLBACK)
    assert trajectory is not None
    # what is written is what parses back through the strict model
    return Trajectory.model_validate_json(trajectory.model_dump_json()), side.notes + notes


def step_cost(prompt: int, cached: int, completion: int) -> float:
    return ((prompt - cached) * 2.0 + cached * 0.5 + completion * 8.0) / 1_000_000


async def test_every_step_is_recorded_as_the_model_saw_it(
    fake_llm, start_agent, tmp_path: Path
) -> None:
    side_file = tmp_path / "solo-1.trajectory.jsonl"
    fake_llm.script(
        chat_tool_calls(
            [
                ("call_a", SHELL, {"command": "echo to-stdout; echo to-stderr >&2; exit 7"}),
                ("call_b", SHELL, '{"command": '),  # not JSON: an error result, nothing runs
            ],
            text="Running the solver.",
            usage=chat_usage(prompt=120, completion=30, cached=100, reasoning=12),
        ),
        Reply(
            body={
                **chat_text("All done.").body,
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": "All done.",
                            "reasoning_content": "The solver failed with exit code 7.",
                        },
                        "finish_reason": "stop",
                    }
                ],
            }
        ),
    )
    env = {**fake_llm.openai_env(), "BUZZ_AGENT_TRAJECTORY_LOG": str(side_file)}
    async with start_agent(env) as agent:
        session = await agent.new_session(system_prompt="[System]\nYou are solo-1.")
        response = await agent.prompt(session, "[Context]\nScope: channel")
    assert response.stop_reason == "end_turn"
    first, second = fake_llm.requests
    sent = first.body["messages"]
    tool_messages = [m for m in second.body["messages"] if m["role"] == "tool"]

    trajectory, notes = assembled(side_file)
    assert notes == []
    assert [step.source for step in trajectory.steps] == ["system", "user", "agent", "agent"]
    system, user, calling, final = trajectory.steps
    assert system.message == sent[0]["content"]  # the system prompt with buzz-agent's hints
    assert system.message.startswith("[System]\nYou are solo-1.\n\n[Environment]")
    assert user.message == sent[1]["content"] == "[Context]\nScope: channel"
    assert calling.message == "Running the solver." and calling.reasoning_content is None
    assert [(c.tool_call_id, c.function_name, c.arguments) for c in calling.tool_calls or []] == [
        ("call_a", SHELL, {"command": "echo to-stdout; echo to-stderr >&2; exit 7"}),
        ("call_b", SHELL, {"_unparsed": '{"command": '}),
    ]
    assert calling.observation is not None
    results = [(r.source_call_id, r.content) for r in calling.observation.results]
    assert results == [
        ("call_a", tool_messages[0]["content"]),
        ("call_b", tool_messages[1]["content"]),
    ]
    assert results[0][1] == "to-stdout\nto-stderr\n[exit code: 7]"
    assert results[1][1].startswith("ERROR: invalid JSON in tool arguments")
    assert calling.metrics is not None
    assert (calling.metrics.prompt_tokens, calling.metrics.cached_tokens) == (120, 100)
    assert calling.metrics.completion_tokens == 30
    assert calling.metrics.cost_usd == step_cost(120, 100, 30)
    assert final.message == "All done."
    assert final.reasoning_content == "The solver failed with exit code 7."
    assert final.tool_calls is None and final.observation is None
    totals = trajectory.final_metrics
    assert (totals.total_prompt_tokens, totals.total_cached_tokens) == (220, 140)
    assert (totals.total_completion_tokens, totals.total_steps) == (40, 4)
    assert totals.total_cost_usd == step_cost(120, 100, 30) + step_cost(100, 40, 10)
    assert trajectory.agent.name == "buzz-agent" and trajectory.agent.model_name == "fake-model"
    tools = {d["function"]["name"]: d for d in trajectory.agent.tool_definitions or []}
    assert tools[SHELL]["type"] == "function"
    assert tools[SHELL]["function"]["parameters"]["required"] == ["command"]
    assert [s.step_id for s in trajectory.steps] == [1, 2, 3, 4]


async def test_an_agent_killed_mid_trajectory_leaves_a_file_that_assembles(
    fake_llm, start_agent, tmp_path: Path
) -> None:
    side_file = tmp_path / "solo-1.trajectory.jsonl"
    started = make_fifo(tmp_path / "started")
    fake_llm.script(chat_tool_call(SHELL, {"command": f"echo up > {started}; exec sleep 60"}))
    env = {**fake_llm.openai_env(), "BUZZ_AGENT_TRAJECTORY_LOG": str(side_file)}
    async with start_agent(env) as agent:
        session = await agent.new_session()
        prompt = asyncio.create_task(agent.prompt(session, "first prompt"))
        await read_fifo(started)  # the tool is running: its result will never be written
        tree = descendants(agent.process.pid)
        os.kill(agent.process.pid, signal.SIGKILL)
        await wait_for_exit(agent.process.pid)
        signal_tree(tree, signal.SIGKILL)  # the MCP server and the shell, in their own groups
        await wait_gone(tree)
        with contextlib.suppress(Exception):
            await prompt
    with side_file.open("ab") as handle:  # as if a writer had been killed in the middle of a line
        handle.write(b'{"kind": "user", "ts": "2026-')
    fake_llm.script(chat_text("back again"))
    async with start_agent(env) as agent:  # buzz-acp's replacement agent, on the same file
        session = await agent.new_session()
        await agent.prompt(session, "second prompt")

    trajectory, notes = assembled(side_file)
    sources = [(step.source, step.message) for step in trajectory.steps]
    assert [source for source, _ in sources] == ["system", "user", "agent"] * 2
    assert sources[1] == ("user", "first prompt") and sources[4] == ("user", "second prompt")
    assert sources[5] == ("agent", "back again")
    killed = trajectory.steps[2]
    assert killed.observation is not None
    assert [(r.source_call_id, r.content) for r in killed.observation.results] == [
        ("call_1", NO_RESULT)
    ]
    assert notes[0].startswith("line 4 skipped: ") and "json" in notes[0].lower()
    assert notes[1:] == ["1 tool call(s) without a result, marked as such"]


def test_a_big_tool_result_is_kept_up_to_the_limit_and_the_cut_is_marked(tmp_path: Path) -> None:
    """No buzz-dev-mcp tool returns this much (the shell keeps the last 8 KiB), another MCP
    server's tool may."""
    side_file = tmp_path / "a.trajectory.jsonl"
    recorder = TrajectoryRecorder.open(str(side_file), name="buzz-agent", version="1", model="m")
    text = "h" * 50_000 + "middle" + "t" * 50_000
    recorder.tool_result("ses_1", "call_1", text, is_error=False)
    recorder.tool_result("ses_1", "call_2", "small", is_error=True)
    recorder.close()
    big, small = read_side_file(side_file).lines
    assert isinstance(big, ToolResultLine) and isinstance(small, ToolResultLine)
    marker = TRAJECTORY_CUT_MARKER.format(n=len(text) - TRAJECTORY_RESULT_LIMIT)
    assert big.content == "h" * 32_768 + f"\n{marker}\n" + "t" * 32_768
    assert (small.content, small.is_error) == ("ERROR: small", True)  # as the model sees it
