"""SIGTERM of an idle tree after a turn, as at the end of every trial (agent-harness.md §1.10):
buzz-acp -> buzz-agent -> buzz-dev-mcp (still serving the warm session) on the real relay, with
`FakeLLM` as the model. The processes skip interpreter finalization once their own shutdown
is done (`orchestra.startup.exit_now`); this checks that nothing that shutdown owes is skipped with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_llm import FakeLLM, chat_text, chat_tool_calls
from tree_support import command_lines, open_room, pid_alive, start_tree

pytestmark = pytest.mark.e2e


async def test_sigterm_of_an_idle_tree_finishes_its_shutdown_before_exiting(
    relay_url: str, tmp_path: Path
) -> None:
    room = await open_room(relay_url)
    base = tmp_path / "tree"
    with FakeLLM() as llm:
        llm.script(
            chat_tool_calls([("call_1", "buzz_dev_mcp__shell", {"command": "echo hi"})]),
            chat_text("done"),
        )
        tree = await start_tree(room, llm.openai_env(), base)
        try:
            await tree.wait_for_event("subscribed")
            await room.mention("@solo-1 say hi")
            await tree.wait_for_event("turn_completed")
            pids = tree.process_ids()
            commands = command_lines(pids)
            assert any(argv[-1].endswith("buzz-dev-mcp") for argv in commands.values())
            scratch = list(base.glob("buzz-dev-mcp-*"))
            assert len(scratch) == 1 and scratch[0].is_dir()
            assert await tree.stop() == 0
            # buzz-acp exits only after its whole tree has: nothing is left to reap or kill.
            assert [pid for pid in pids[1:] if pid_alive(pid)] == []
            # buzz-dev-mcp removed its scratch directory on the way out ...
            assert not scratch[0].exists()
            records = tree.events()
            assert records[-1]["event"] == "shutdown" and records[-1]["exit_code"] == 0
            stderr = tree.stderr()
            # ... and buzz-agent's and buzz-acp's last log lines were flushed.
            assert "buzz_agent: session closed ses_" in stderr
            assert "buzz_acp: shutting down (signal), exit code 0" in stderr
            assert "Traceback" not in stderr
        finally:
            await tree.kill()
            await room.user.close()
