"""buzz-acp process-level startup failures and exit codes (agent-harness.md §1.2, §1.10)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from orchestra.nostr.keys import Keys

KEYS = Keys.generate()


def run_acp(tmp_path: Path, **env: str) -> tuple[int, str, list[dict[str, object]]]:
    events = tmp_path / "events.jsonl"
    full_env = {
        **os.environ,
        "BUZZ_PRIVATE_KEY": KEYS.secret_hex,
        "BUZZ_ACP_AGENT_COMMAND": sys.executable,
        "BUZZ_ACP_MCP_COMMAND": "none",
        "BUZZ_ACP_EVENT_LOG": str(events),
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-m", "orchestra.agents.acp"],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    records = (
        [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else []
    )
    assert done.stdout == ""  # nothing but the event log ever goes to stdout (here: a file)
    return done.returncode, done.stderr, records


def test_help_lists_every_option() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "orchestra.agents.acp", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0
    for flag in [
        "--relay-url",
        "--private-key",
        "--idle-timeout",
        "--batch-window-ms",
        "--event-log",
        "--system-prompt-file",
        "--no-base-prompt",
    ]:
        assert flag in done.stdout


def test_help_into_a_closed_pipe_exits_0_without_a_traceback() -> None:
    # `buzz-acp --help | head -1`: the reader is gone before the help is written.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "orchestra.agents.acp", "--help"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=30,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0
    assert done.stderr == ""


def test_configuration_error_exits_1(tmp_path: Path) -> None:
    code, stderr, records = run_acp(tmp_path, BUZZ_ACP_AGENTS="0")
    assert code == 1
    assert (
        "ERROR buzz_acp: configuration error: BUZZ_ACP_AGENTS: must be between 1 and 32" in stderr
    )
    assert records[-1]["event"] == "shutdown" and records[-1]["exit_code"] == 1
    assert "Traceback" not in stderr


def test_unknown_flag_is_a_configuration_error(tmp_path: Path) -> None:
    events = tmp_path / "e.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "orchestra.agents.acp", "--no-such-flag", "1"],
        env={**os.environ, "BUZZ_PRIVATE_KEY": KEYS.secret_hex, "BUZZ_ACP_EVENT_LOG": str(events)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1 and "unknown argument '--no-such-flag'" in done.stderr


def test_agent_that_fails_to_initialize_exits_1(tmp_path: Path) -> None:
    code, stderr, records = run_acp(
        tmp_path,
        BUZZ_ACP_AGENT_ARGS="-c,import sys; sys.exit(7)",
        BUZZ_RELAY_URL="ws://127.0.0.1:9",
    )
    assert code == 1
    assert "agent failed to initialize: exited with code 7" in stderr
    names = [r["event"] for r in records]
    assert names[:2] == ["startup", "agent_spawned"] and names[-1] == "shutdown"
    assert "relay_connected" not in names  # the model configuration fails before the relay


def test_unreachable_relay_exits_2(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    fake = Path(__file__).with_name("test_acp_bridge.py")
    code, stderr, records = run_acp(
        tmp_path,
        BUZZ_ACP_AGENT_ARGS=f"{fake},--fake-agent",
        BUZZ_RELAY_URL=f"ws://127.0.0.1:{port}",
        BUZZ_ACP_CONNECT_TIMEOUT="1",
        FAKE_ACP_LOG=str(tmp_path / "agent.jsonl"),
    )
    assert code == 2, stderr
    assert records[-1] == records[-1] | {"event": "shutdown", "exit_code": 2}
    assert "relay not reachable" in stderr
