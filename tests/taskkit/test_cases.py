"""`verifier-cases.toml` beyond trial-channel messages: events of any kind, other channels,
fresh keys and written files, in file order, built into `trace`, `relay_events` and
`agent_files` as a real export would hold them (docs/writing-a-task.md §2, step 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestra.config.errors import ConfigError
from orchestra.config.task import load_task
from orchestra.taskkit.cases import (
    AGENT_ID,
    CHANNEL_ID,
    FRESH_KEY,
    CaseWorld,
    fake_pubkey,
    load_cases,
)
from orchestra.taskkit.scaffold import scaffold

CASES = """
[[case]]
name = "everything an agent can do"
expect = { reward = 0.0 }
[[case.message]]
content = "first"
reply_to = "task"
[[case.event]]
kind = 9007
channel = "side-room"
tags = [["name", "side"]]
[[case.message]]
channel = "side-room"
content = "second"
tags = [["subject", "x"]]
[[case.event]]
kind = 0
content = "{}"
[[case.message]]
author = "fresh-key"
channel = "elsewhere"
content = "third"
[[case.file]]
path = "/workspace/out.txt"
content = "written"
"""


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    task_dir = tmp_path / "suite" / "ready-task"
    scaffold(task_dir, "regression")
    return task_dir


def test_a_case_keeps_file_order_across_messages_and_events(task_dir: Path) -> None:
    (task_dir / "verifier-cases.toml").write_text(CASES, encoding="utf-8")
    [case] = load_cases(task_dir)
    evidence = CaseWorld(load_task(task_dir)).evidence(case)
    agent = fake_pubkey(AGENT_ID)
    trace = [(e["id"], e["kind"], e["channel_id"], e["seq"]) for e in evidence["trace"]]
    assert trace == [
        ("task", 9, CHANNEL_ID, 1),
        ("case-message-1", 9, CHANNEL_ID, 2),
        ("case-event-2", 9007, "side-room", 3),
        ("case-message-3", 9, "side-room", 4),
        ("case-event-4", 0, None, 5),
    ]
    assert evidence["trace"][3]["tags"] == [["h", "side-room"], ["subject", "x"]]
    assert evidence["trace"][4]["pubkey"] == agent and evidence["trace"][4]["tags"] == []
    # the fresh key's message in a channel nobody of the trial touched: stored only
    fresh = evidence["relay_events"][-1]
    assert (fresh["content"], fresh["pubkey"], fresh["author"]) == (
        "third",
        fake_pubkey(FRESH_KEY),
        "unknown",
    )
    assert [m["id"] for m in evidence["messages"]] == ["task", "case-message-1"]
    assert evidence["agent_files"] == [
        {
            "agent_id": AGENT_ID,
            "path": "/workspace/out.txt",
            "size": 7,
            "content": "written",
            "truncated": False,
        }
    ]


def test_a_relative_file_path_is_named(task_dir: Path) -> None:
    (task_dir / "verifier-cases.toml").write_text(
        CASES.replace("/workspace/out.txt", "out.txt"), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"\[case\]\.\[0\]\.file\[0\]\.path.*absolute"):
        load_cases(task_dir)


def test_an_event_needs_its_kind(task_dir: Path) -> None:
    (task_dir / "verifier-cases.toml").write_text(
        CASES.replace("kind = 9007\n", ""), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"\[case\]\.\[0\]\.event\[0\]\.kind"):
        load_cases(task_dir)
