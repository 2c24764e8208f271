"""End to end (agent-harness.md §5.4, §7 item 7): real relay, buzz-acp → buzz-agent →
buzz-dev-mcp → buzz, with the oracle model in-process replaying a small solve script."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from orchestra.agents.agent.turn import CONTINUE_AFTER_TRUNCATION
from orchestra.agents.oracle import (
    OracleAgent,
    OracleServer,
    OracleTrial,
    fault_plan_from_env,
    oracle_token,
)
from orchestra.agents.trajectory.atif import AgentInfo, Trajectory
from orchestra.agents.trajectory.sidefile import read_side_file
from orchestra.buzz import BuzzClient
from orchestra.nostr.keys import Keys
from orchestra.trial.trajectories import assemble

VENV_BIN = Path(sys.executable).parent
WAIT_S = 90.0
SOLVE = """#!/usr/bin/env bash
set -euo pipefail
STATE_DIR="{state}"
mkdir -p "$STATE_DIR"
echo "$BUZZ_CHANNEL_ID $BUZZ_REPLY_TO $BUZZ_REQUESTER_NAME" >> "$STATE_DIR/runs.txt"
if [ ! -e "$STATE_DIR/reply.sent" ]; then
  printf '%s\\n' "@$BUZZ_REQUESTER_NAME the projection is ready" '' '- line three' \\
    | buzz messages send --channel "$BUZZ_CHANNEL_ID" --content - \\
        --reply-to "$BUZZ_REPLY_TO" --mention "$BUZZ_REQUESTER_PUBKEY" > "$STATE_DIR/reply.json"
  touch "$STATE_DIR/reply.sent"
fi
touch "$STATE_DIR/done"
"""
EXPLODING_SOLVE = """#!/usr/bin/env bash
echo "solving for $BUZZ_REQUESTER_NAME"
echo "solver exploded" >&2
exit 7
"""
FREE = SimpleNamespace(
    input_per_million_usd=0.0,
    cached_input_per_million_usd=0.0,
    output_per_million_usd=0.0,
    cache_read_rate=0.0,
    cache_write_per_million_usd=None,
)


def trajectory_of(side_file: Path) -> Trajectory:
    """As the orchestrator assembles it at teardown (orchestrator.md §7.16)."""
    fallback = AgentInfo(name="buzz-agent", version="unknown")
    side = read_side_file(side_file)
    trajectory, _ = assemble(side.lines, session_id="t:solo-1", price=FREE, fallback=fallback)
    assert trajectory is not None and side.notes == []
    return trajectory


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def wait_until(predicate: Any, describe: Any, limit_s: float = WAIT_S) -> Any:
    """Follow files that the processes write (their only readiness signal)."""
    deadline = time.monotonic() + limit_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out: {describe()}")
        await asyncio.sleep(0.1)


async def run_trial(
    relay_url: str,
    tmp_path: Path,
    faults: dict[str, str],
    extra_env: dict[str, str],
    solve: str = SOLVE,
) -> dict[str, Any]:
    user_keys, agent_keys = Keys.generate(), Keys.generate()
    trial_id = uuid.uuid4().hex
    user = BuzzClient.from_keys(relay_url, user_keys)
    await user.users_set_profile(display_name="Trial User")
    channel = (await user.channels_create(f"oracle-{trial_id[:8]}"))["channel_id"]
    await user.channels_add_member(channel, agent_keys.pubkey, role="bot")
    state = tmp_path / "solve-state"
    script = tmp_path / "solve.sh"
    script.write_text(solve.format(state=state) if solve is SOLVE else solve)
    script.chmod(0o755)
    token = oracle_token(trial_id, "solo-1")
    server = OracleServer(model_names=["oracle"])
    await server.start()
    server.register(
        OracleTrial(
            trial_id=trial_id,
            channel_id=channel,
            requester_pubkey=user_keys.pubkey,
            requester_name="Trial User",
            solve_path=str(script),
            state_dir=str(state),
            agents={token: OracleAgent(agent_id="solo-1", faults=fault_plan_from_env(faults))},
            log_path=tmp_path / "oracle.jsonl",
        )
    )
    events_path = tmp_path / "events.jsonl"
    side_file = tmp_path / "solo-1.trajectory.jsonl"
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "BUZZ_RELAY_URL": relay_url,
        "BUZZ_PRIVATE_KEY": agent_keys.secret_hex,
        "BUZZ_ACP_AGENT_COMMAND": str(VENV_BIN / "buzz-agent"),
        "BUZZ_ACP_AGENT_ARGS": "",
        "BUZZ_ACP_MCP_COMMAND": str(VENV_BIN / "buzz-dev-mcp"),
        "BUZZ_ACP_CHANNELS": channel,
        "BUZZ_ACP_NO_MEMORY": "true",
        "BUZZ_ACP_EVENT_LOG": str(events_path),
        "BUZZ_AGENT_TRAJECTORY_LOG": str(side_file),
        "BUZZ_ACP_BATCH_WINDOW_MS": "200",
        "BUZZ_AGENT_PROVIDER": "openai",
        "BUZZ_AGENT_MODEL": "oracle",
        "OPENAI_COMPAT_BASE_URL": server.base_url(),
        "OPENAI_COMPAT_API": "chat",
        "OPENAI_COMPAT_API_KEY": token,
        "BUZZ_AGENT_NO_HINTS": "1",
        "BUZZ_AGENT_THINKING_EFFORT": "medium",
        **extra_env,
    }
    stderr_path = tmp_path / "acp.stderr.log"
    with stderr_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            str(VENV_BIN / "buzz-acp"),
            env=env,
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:

        def log_text() -> str:
            return f"{read_jsonl(events_path)}\n{stderr_path.read_text()}"

        await wait_until(
            lambda: any(r["event"] == "subscribed" for r in read_jsonl(events_path)), log_text
        )
        task = await user.messages_send(
            channel, "@solo-1 Prepare the projection.", mention=[agent_keys.pubkey]
        )
        server.set_task_event(trial_id, task["event_id"])

        def finished() -> bool:
            records = read_jsonl(events_path)
            return any(r["event"] == "turn_completed" for r in records)

        await wait_until(finished, log_text)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
        replies = await user.query([{"kinds": [9], "#h": [channel], "#e": [task["event_id"]]}])
        return {
            "task": task["event_id"],
            "user": user_keys.pubkey,
            "agent": agent_keys.pubkey,
            "records": read_jsonl(events_path),
            "replies": replies,
            "runs": (state / "runs.txt").read_text().splitlines() if solve is SOLVE else [],
            "oracle": read_jsonl(tmp_path / "oracle.jsonl"),
            "stderr": stderr_path.read_text(),
            "token": token,
            "channel": channel,
            "trajectory": trajectory_of(side_file),
        }
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        server.unregister(trial_id)
        await server.stop()
        await user.close()


def assert_published_once(result: dict[str, Any]) -> None:
    (reply,) = result["replies"]
    assert reply["pubkey"] == result["agent"]
    assert ["e", result["task"], "", "reply"] in reply["tags"]
    assert ["p", result["user"]] in [t[:2] for t in reply["tags"] if t[0] == "p"]
    assert reply["content"] == "@Trial User the projection is ready\n\n- line three"
    records = result["records"]
    started = [r for r in records if r["event"] == "turn_started"]
    completed = [r for r in records if r["event"] == "turn_completed"]
    assert [c["stop_reason"] for c in completed] == ["end_turn"]
    assert completed[0]["event_ids"] == [result["task"]]
    assert completed[0]["usage"]["turn"]["llm_calls"] >= 2
    assert started[-1]["turn_id"] == completed[0]["turn_id"]
    assert result["token"] not in result["stderr"] + json.dumps(records)


@pytest.mark.e2e
async def test_mention_runs_the_solution_through_the_whole_stack(
    relay_url: str, tmp_path: Path
) -> None:
    result = await run_trial(relay_url, tmp_path, {}, {})
    assert_published_once(result)
    assert len([r for r in result["records"] if r["event"] == "turn_started"]) == 1
    assert result["runs"] == [f"{result['channel']} {result['task']} Trial User"]
    decisions = [r["decision"] for r in result["oracle"]]
    assert decisions == ["tool_call", "final"]
    assert all(r["context_mismatch"] is None for r in result["oracle"])
    assert any(r["event"] == "tool_call" and r["status"] == "completed" for r in result["records"])


@pytest.mark.e2e
async def test_every_fault_kind_is_absorbed(relay_url: str, tmp_path: Path) -> None:
    faults = {
        "ORACLE_FAULTS": "429:1,500:1,slow:1,malformed:1,unknown_tool:1,truncated:1",
        "ORACLE_SLOW_SECONDS": "0.5",
    }
    result = await run_trial(relay_url, tmp_path, faults, {})
    assert_published_once(result)
    assert len([r for r in result["records"] if r["event"] == "turn_started"]) == 1
    assert [r["fault"] for r in result["oracle"][:6]] == [
        "429",
        "500",
        "slow",
        "malformed",
        "unknown_tool",
        "truncated",
    ]
    # retried requests leave no step; the answered ones do, with what the model was told
    steps = result["trajectory"].steps
    answered = [
        (call.function_name, call.arguments, step.observation.results[0].content)  # type: ignore[union-attr]
        for step in steps
        for call in step.tool_calls or []
    ]
    # the slow answer is the normal one (the solve call); then the malformed and unknown calls
    solve, malformed, unknown = answered
    assert malformed[1] == {"_unparsed": '{"command": '}
    assert malformed[2].startswith("ERROR: invalid JSON in tool arguments: ")
    assert unknown[:2] == ("oracle_missing__tool", {})
    assert unknown[2].startswith('ERROR: unknown tool "oracle_missing__tool"; available: ')
    assert solve[2] == "[exit code: 0]"
    assert [s.message for s in steps if s.source == "user"][1:] == [CONTINUE_AFTER_TRUNCATION]
    assert "oracle: partial" in [s.message for s in steps if s.source == "agent"]


@pytest.mark.e2e
async def test_a_failing_solution_shows_its_output_and_exit_code_in_the_trajectory(
    relay_url: str, tmp_path: Path
) -> None:
    result = await run_trial(relay_url, tmp_path, {}, {}, solve=EXPLODING_SOLVE)
    assert result["replies"] == []
    steps = result["trajectory"].steps
    assert [s.source for s in steps] == ["system", "user", *["agent"] * 4]
    runs = [
        (call.tool_call_id, step.observation.results[0].content)  # type: ignore[union-attr]
        for step in steps
        for call in step.tool_calls or []
    ]
    output = "solving for Trial User\nsolver exploded\n[exit code: 7]"
    assert runs == [(f"oracle-solve-solo-1-{n}", output) for n in (1, 2, 3)]  # the oracle's cap


@pytest.mark.e2e
async def test_exhausted_llm_retries_make_buzz_acp_retry_the_turn(
    relay_url: str, tmp_path: Path
) -> None:
    result = await run_trial(
        relay_url, tmp_path, {"ORACLE_FAULTS": "429:3"}, {"BUZZ_AGENT_LLM_MAX_RETRIES": "1"}
    )
    assert_published_once(result)
    failed = [r for r in result["records"] if r["event"] == "turn_failed"]
    assert [(f["attempt"], f["will_retry"]) for f in failed] == [(1, True)]
    assert not [r for r in result["records"] if r["event"] == "failure_notice"]
