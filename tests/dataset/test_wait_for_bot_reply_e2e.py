"""wait-for-bot-reply waits for real (orchestrator.md §6 `delay_seconds`, §7.11): the bot's
reply comes 10 s after the task and the trial does not end before it. Through the real stack:
the oracle, which polls the thread, scores 1; an agent that reads the thread once, when the
task arrives, and reports what it found reports nothing and scores 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestra.config.task import load_task
from orchestra.paths import PROJECT_ROOT, TaskPaths
from orchestra.taskkit.stack import StackOptions, check_run, replay

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASK = PROJECT_ROOT / "tasks" / "buzz-contracts" / "wait-for-bot-reply"

READS_ONCE = """#!/usr/bin/env bash
# Reads the thread once, when the task arrives, and reports whatever it found: no polling.
set -euo pipefail
STATE_DIR="${TMPDIR:-/tmp}/buzz-solve-${BUZZ_CHANNEL_ID}"
mkdir -p "$STATE_DIR"
if [ ! -e "$STATE_DIR/answer.sent" ]; then
  found="$(buzz messages thread --channel "$BUZZ_CHANNEL_ID" --event "$BUZZ_REPLY_TO" | python3 -c '
import json, re, sys
hits = [m.group(0) for e in json.load(sys.stdin)
        for m in [re.search(r"Nightly build \\d+ finished.*", e["content"])] if m]
print(hits[0] if hits else "no build result yet")
')"
  printf '@%s %s\\n' "$BUZZ_REQUESTER_NAME" "$found" | buzz messages send \\
    --channel "$BUZZ_CHANNEL_ID" --content - --reply-to "$BUZZ_REPLY_TO" \\
    --mention "$BUZZ_REQUESTER_PUBKEY" >/dev/null
  touch "$STATE_DIR/answer.sent"
fi
touch "$STATE_DIR/done"
"""


def test_the_fixture_delays_the_bots_reply() -> None:
    [reply] = load_task(TASK).fixture.scripted_messages
    assert reply.delay_seconds == 10 and not reply.mention_orchestrator


def test_the_oracle_polls_and_passes_an_agent_that_reads_once_reports_nothing(
    stack_scratch: Path, free_port: int
) -> None:
    reads_once = stack_scratch / "reads-once.sh"
    reads_once.write_text(READS_ONCE, encoding="utf-8")
    stack = StackOptions(
        stack_scratch / "runs",
        check_run({"relay_port": free_port, "state_dir": stack_scratch / "state"}),
    )
    oracle = replay("oracle", {TASK: TaskPaths(TASK).solve_sh}, stack)
    found = oracle.replays.get(TASK.name)
    assert found is not None, oracle.why_no_trial()
    assert found.result.status == "scored", found.result.exception_info
    assert found.result.rewards is not None and found.result.rewards["reward"] == 1.0
    assert found.result.stop_reason == "turn_end"

    once = replay("reads-once", {TASK: reads_once}, stack)
    found = once.replays.get(TASK.name)
    assert found is not None, once.why_no_trial()
    result = found.result
    assert result.status == "scored", result.exception_info
    # it ended its turn at once, yet the trial waited for the bot's reply before stopping
    assert result.stop_reason == "turn_end"
    assert result.rewards is not None, result
    assert result.rewards["reported_result"] == 0.0 and result.rewards["reward"] == 0.0
    evidence = (found.trial_dir / "agent" / "buzz" / "buzz-evidence.json").read_text()
    assert "Nightly build 4812 finished" in evidence  # the reply was posted, after the answer
    assert "no build result yet" in evidence
