"""buzz-agent + buzz-dev-mcp against the in-process oracle model (agent-harness.md §5.1, §5.3)."""

from __future__ import annotations

from pathlib import Path

from oracle_support import CHANNEL, REQUESTER, TASK_EVENT
from oracle_support import TASK_PROMPT as PROMPT

from orchestra.agents.oracle import (
    OracleAgent,
    OracleServer,
    OracleTrial,
    fault_plan_from_env,
    oracle_token,
)

TRIAL = "trial-agent-e2e"


def _solve_script(tmp_path: Path, state_dir: Path) -> tuple[Path, Path]:
    runs = tmp_path / "runs.txt"
    script = tmp_path / "solve.sh"
    script.write_text(
        "#!/bin/bash\nset -e\n"
        f'echo "$BUZZ_CHANNEL_ID $BUZZ_REPLY_TO $BUZZ_REQUESTER_NAME" >> {runs}\n'
        f"mkdir -p {state_dir}\ntouch {state_dir}/done\n"
    )
    script.chmod(0o755)
    return script, runs


async def _run_solo(tmp_path: Path, start_agent, faults: dict[str, str]) -> tuple[str, Path]:
    state_dir = tmp_path / "state"
    script, runs = _solve_script(tmp_path, state_dir)
    token = oracle_token(TRIAL, "solo-1")
    server = OracleServer(model_names=["oracle"])
    await server.start()
    try:
        server.register(
            OracleTrial(
                trial_id=TRIAL,
                channel_id=CHANNEL,
                requester_pubkey=REQUESTER,
                requester_name="Trial User",
                solve_path=str(script),
                state_dir=str(state_dir),
                agents={token: OracleAgent(agent_id="solo-1", faults=fault_plan_from_env(faults))},
                log_path=tmp_path / "oracle.jsonl",
                task_event_id=TASK_EVENT,
            )
        )
        env = {
            "BUZZ_AGENT_PROVIDER": "openai",
            "BUZZ_AGENT_MODEL": "oracle",
            "OPENAI_COMPAT_BASE_URL": server.base_url(),
            "OPENAI_COMPAT_API": "chat",
            "OPENAI_COMPAT_API_KEY": token,
            "BUZZ_AGENT_THINKING_EFFORT": "medium",
            "BUZZ_AGENT_LLM_TIMEOUT_SECS": "2",
            "BUZZ_AGENT_NO_HINTS": "1",
        }
        async with start_agent(env) as agent:
            session = await agent.new_session()
            response = await agent.prompt(session, PROMPT)
        assert token not in agent.stderr_text()
        return response.stop_reason, runs
    finally:
        server.unregister(TRIAL)
        await server.stop()


async def test_oracle_solution_runs_once_through_the_shell_tool(
    tmp_path: Path, start_agent
) -> None:
    stop_reason, runs = await _run_solo(tmp_path, start_agent, {})
    assert stop_reason == "end_turn"
    assert runs.read_text() == f"{CHANNEL} {TASK_EVENT} Trial User\n"


async def test_every_oracle_fault_is_absorbed(tmp_path: Path, start_agent) -> None:
    faults = {
        "ORACLE_FAULTS": "429:1,500:1,slow:1,malformed:1,unknown_tool:1,truncated:1",
        "ORACLE_SLOW_SECONDS": "3",
    }  # longer than the 2 s LLM timeout: retried
    stop_reason, runs = await _run_solo(tmp_path, start_agent, faults)
    assert stop_reason == "end_turn"
    assert runs.read_text() == f"{CHANNEL} {TASK_EVENT} Trial User\n"
