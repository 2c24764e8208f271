"""The instructions must not leak what a task grades without stating (dataset.md §1, §2.9).

Most buzz-native behaviours (threading, callback mentions, not waking bots) must come from the
platform base prompt; an instruction that spells them out would measure instruction following
instead. Answers that the agent must look up must not be in the text either.
"""

import re
from pathlib import Path

import pytest

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "buzz-native"
ALL_TASKS = sorted(p.name for p in TASKS.iterdir() if (p / "instruction.md").is_file())


def instruction(task: str) -> str:
    return (TASKS / task / "instruction.md").read_text(encoding="utf-8")


def test_all_ten_instructions_exist() -> None:
    assert len(ALL_TASKS) == 10


# Words that would state a graded-but-unstated behaviour, per task (case-insensitive substrings).
UNSTATED = {
    # dataset.md §2.9: the two regression checks the spec names.
    "reply-to-thread": ("thread",),
    "user-mention": ("mention", "@", "tag", "notify"),
    # Threading and the callback mention are graded but not stated (§7).
    "multiline-message": ("thread", "mention", "@", "notify", "tag"),
    # Not adding p tags and not writing @Name is the behaviour under test (§8).
    "narrative-agent-names": ("mention", "@", "notify", "tag", "ping", "wake"),
    # The callback and the no-re-mention rule are not stated (§9).
    "interleaved-agent-reports": ("mention", "@", "notify", "tag", "thread"),
    # Threading is not stated (§10).
    "cross-thread-requests": ("thread", "mention", "@", "notify", "tag"),
}


@pytest.mark.parametrize(("task", "word"), [(t, w) for t, ws in UNSTATED.items() for w in ws])
def test_instruction_does_not_state_the_graded_behaviour(task: str, word: str) -> None:
    assert word not in instruction(task).casefold()


@pytest.mark.parametrize("task", ALL_TASKS)
def test_no_instruction_addresses_anyone_with_an_at_name(task: str) -> None:
    # orchestrator.md §7.2 step 11: the task is posted with the orchestrator as the only mention;
    # an @Name in the text naming a channel member would add a recipient of its own.
    assert re.search(r"(?:^|[\s(\[{<\"'*_~])@\w", instruction(task)) is None


def test_memory_retrieval_does_not_contain_the_answer() -> None:
    text = instruction("memory-retrieval")
    assert "352,345" not in text
    assert "352345" not in text.replace(",", "")
    assert "memory" in text  # the task does state where the value lives


def test_memory_retrieval_does_not_contain_any_seeded_number() -> None:
    numbers = {n.replace(",", "") for n in re.findall(r"\d[\d,]*", instruction("memory-retrieval"))}
    assert numbers == {"2024"}


def test_interleaved_reports_numbers_come_only_from_the_reports() -> None:
    assert re.search(r"\d", instruction("interleaved-agent-reports")) is None


def test_cross_thread_alpha_request_does_not_reveal_beta_or_the_answers() -> None:
    text = instruction("cross-thread-requests")
    assert "BETA" not in text
    assert "84" not in text
    for answer in ("346", "41"):
        assert answer not in text


def test_user_mention_does_not_reveal_the_total() -> None:
    assert "5,328" not in instruction("user-mention")
    assert "5328" not in instruction("user-mention")


def test_reply_to_thread_does_not_reveal_the_results() -> None:
    text = instruction("reply-to-thread").replace(",", "")
    for amount in ("160811", "84462", "374470"):
        assert amount not in text


def test_read_named_path_does_not_reveal_the_file_values() -> None:
    text = instruction("read-named-path-outside-workspace")
    assert "chc-" not in text
    assert "Recommend compaction" not in text
    assert "~/.claude/skills/context-health-check/SKILL.md" in text  # the path itself is stated


def test_ambiguous_mention_names_only_the_target_routing_code() -> None:
    text = instruction("ambiguous-user-mention")
    assert "ORCHID-72" in text
    for leak in ("COBALT", "taylor-release-captain", "taylor-observer", "Release captain"):
        assert leak not in text
