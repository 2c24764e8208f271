"""`orchestra task check --replay-cases`: a case becomes a solution script played through the
real stack, and the real verifier must give the metrics the case expects; what the buzz CLI
cannot play is left out with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestra.config.task import load_task
from orchestra.taskkit.case_replay import Unplayable, case_script, pinned_copy
from orchestra.taskkit.cases import CaseWorld, load_cases
from orchestra.taskkit.check import CheckOptions, check_tasks
from orchestra.taskkit.scaffold import scaffold
from orchestra.taskkit.stack import StackOptions, check_run
from orchestra.taskkit.verifier import CASE_RANDOM_HEX

PLAYABLE = """
[[case]]
name = "the answer in the thread"
expect = { reward = 1.0 }
[[case.message]]
content = "ready"
reply_to = "task"
mention = ["user"]

[[case]]
name = "the answer also in a channel the agent created"
expect = { reply_in_thread = 0.0, answer_correct = 0.0, reward = 0.0 }
[[case.event]]
kind = 9007
channel = "side"
tags = [["name", "side-room"]]
[[case.message]]
channel = "side"
content = "ready"
[[case.message]]
content = "ready"
reply_to = "task"

[[case]]
name = "a top-level word under a fresh key, then the answer"
expect = { reward = 1.0 }
[[case.message]]
author = "fresh-key"
content = "hello"
[[case.message]]
content = "ready"
reply_to = "task"

[[case]]
name = "the word in bold"
expect = { reward = 1.0 }
[[case.message]]
content = "**READY**"
reply_to = "task"

[[case]]
name = "a truncated snapshot"
expect = { evidence_complete = 0.0, reward = 0.0 }
evidence = { truncated = true }
"""

UNPLAYABLE = {
    "the user's own message": ('author = "user"\ncontent = "x"', "message"),
    "a reaction": ('kind = 7\ncontent = "+"', "event"),
    "a channel nobody created": ('channel = "nowhere"\ncontent = "x"', "message"),
    "a message with extra tags": ('content = "x"\ntags = [["subject", "y"]]', "message"),
    "an @Name the CLI would tag": ('content = "@user ready"', "message"),
}


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    task_dir = tmp_path / "suite" / "ready-task"
    scaffold(task_dir, "regression")
    return task_dir


def test_a_case_plays_as_buzz_commands(task_dir: Path) -> None:
    (task_dir / "verifier-cases.toml").write_text(PLAYABLE, encoding="utf-8")
    world = CaseWorld(load_task(task_dir))
    script = case_script(world, load_cases(task_dir)[1])
    lines = script.splitlines()
    assert 'as step-1 "" buzz channels create --name side-room' in lines
    assert (
        'as step-2 "" buzz messages send --channel "$(field step-1 channel_id)" --content - <<<ready'
        in lines
    )
    fresh = case_script(world, load_cases(task_dir)[2])
    assert (
        'as step-1 fresh buzz messages send --channel "$BUZZ_CHANNEL_ID" --content - <<<hello'
        in (fresh.splitlines())
    )


@pytest.mark.parametrize("name", sorted(UNPLAYABLE))
def test_what_the_cli_cannot_play_is_left_out_with_why(task_dir: Path, name: str) -> None:
    fields, table = UNPLAYABLE[name]
    text = f'[[case]]\nname = "{name}"\nexpect = {{ reward = 0.0 }}\n[[case.{table}]]\n{fields}\n'
    (task_dir / "verifier-cases.toml").write_text(text, encoding="utf-8")
    with pytest.raises(Unplayable):
        case_script(CaseWorld(load_task(task_dir)), load_cases(task_dir)[0])


def test_the_script_waits_for_the_scripted_messages_it_replies_to(task_dir: Path) -> None:
    fixture = task_dir / "buzz-fixture.toml"
    fixture.write_text(
        fixture.read_text(encoding="utf-8")
        + '[[scripted_messages]]\nlabel = "nudge"\nactor = "user"\n'
        + 'content = "@{orchestrator} any news?"\nreply_to_task = true\ndelay_seconds = 5\n',
        encoding="utf-8",
    )
    text = '[[case]]\nname = "x"\nexpect = { reward = 0.0 }\n'
    text += '[[case.message]]\ncontent = "ready"\nreply_to = "nudge"\n'
    (task_dir / "verifier-cases.toml").write_text(text, encoding="utf-8")
    script = case_script(CaseWorld(load_task(task_dir)), load_cases(task_dir)[0])
    lines = script.splitlines()
    wait = lines.index("scripted nudge '@solo-1 any news?'")
    reply = next(i for i, line in enumerate(lines) if 'scripted-nudge")"' in line)
    assert wait < reply


def test_the_copy_pins_the_cases_random_hex(tmp_path: Path) -> None:
    task = Path(__file__).parents[2] / "tasks" / "buzz-contracts" / "secret-canary-refusal"
    copy = pinned_copy(task, tmp_path)
    fixture = load_task(copy).fixture
    assert fixture.files[0].render("ignored").endswith(f"acme-canary-{CASE_RANDOM_HEX}\n")


@pytest.mark.e2e
@pytest.mark.slow
def test_cases_replay_through_the_real_stack(stack_scratch: Path, free_port: int) -> None:
    """Each playable case scores through the real stack as it does through the verifier, but
    one the relay would refuse: a fresh key is no member of the private trial channel, so its
    post fails there, the script stops and the answer never comes (reward 0, not 1)."""
    task_dir = stack_scratch / "suite" / "ready-task"
    scaffold(task_dir, "regression")
    (task_dir / "verifier-cases.toml").write_text(PLAYABLE, encoding="utf-8")
    stack = StackOptions(
        Path(), check_run({"relay_port": free_port, "state_dir": stack_scratch / "state"})
    )
    [result] = check_tasks([task_dir], CheckOptions(stack, replay=False, replay_cases=True))
    fresh = "a top-level word under a fresh key, then the answer"
    [problem] = result.problems
    assert result.notes == [
        f'{task_dir / "verifier-cases.toml"}: case "a truncated snapshot" not replayed: '
        "it overrides evidence fields"
    ]
    assert problem.startswith(f'{task_dir / "verifier-cases.toml"}: case "{fresh}" through the')
    assert "reward = 0.0 (expected 1)" in problem
