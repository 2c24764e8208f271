"""The agent pool in-process (agent-harness.md §1.8): respawn with backoff and the crash loop."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from orchestra.agents.acp import pool as pool_module
from orchestra.agents.acp.config import load_config
from orchestra.agents.acp.eventlog import EventLog
from orchestra.agents.acp.pool import AgentPool
from orchestra.backoff import Backoff
from orchestra.nostr.keys import Keys

# Answers `initialize` (raw JSON-RPC, no SDK import so it starts fast), then exits with code 5.
SHORT_LIVED_AGENT = """
import json, sys
request = json.loads(sys.stdin.readline())
result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [],
          "agentInfo": {"name": "short-lived", "version": "1"}}
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
sys.stdout.flush()
sys.exit(5)
"""


async def test_crash_loop_after_more_than_five_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "RESPAWN_BACKOFF", Backoff.steps(0))
    script = tmp_path / "agent.py"
    script.write_text(SHORT_LIVED_AGENT)
    config = load_config(
        {
            "BUZZ_PRIVATE_KEY": Keys.generate().secret_hex,
            "BUZZ_ACP_AGENT_COMMAND": sys.executable,
            "BUZZ_ACP_AGENT_ARGS": str(script),
            "BUZZ_ACP_MCP_COMMAND": "none",
            "BUZZ_ACP_CWD": str(tmp_path),
        }
    )
    log = io.StringIO()
    pool = AgentPool(config, EventLog(log, "ab" * 32), lambda session, usage: None)
    try:
        await pool.start()
        await pool.crash_loop.wait()
    finally:
        await pool.stop_all()
    records = [json.loads(line) for line in log.getvalue().splitlines()]
    exits = [r for r in records if r["event"] == "agent_exited"]
    assert len(exits) == 6 and all(r["exit_code"] == 5 and not r["during_turn"] for r in exits)
    assert [r["event"] for r in records].count("agent_initialized") == 6
    assert records[1]["agent_name"] == "short-lived"
    assert records[1]["system_prompt_delivery"] == "inline"
