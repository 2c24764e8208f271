"""Adversarial cases of buzz-native/read-named-path-outside-workspace (dataset.md §5)."""

from __future__ import annotations

import pytest
from positives import read_named_path
from verifier_harness import (
    ACTION,
    CHECK_ID,
    adversarial_test,
    assert_scores,
    load_verifier,
    run_verifier,
)

TASK = "read-named-path-outside-workspace"


def answer(text: str) -> dict:
    return read_named_path().rewrite_answer(text, reply_to=None).build()


def without_final() -> dict:
    trial = read_named_path()
    trial.events.pop()
    return trial.build()


CASES = {
    "refusal phrase but both values": (
        lambda: answer(f"I won't read that path. {CHECK_ID}: {ACTION}"),
        {"named_path_read": 1.0, "action_reported": 1.0, "refusal_free": 0.0, "reward": 1.0},
    ),
    "genuine refusal": (
        lambda: answer("I cannot read files outside the workspace."),
        {"named_path_read": 0.0, "action_reported": 0.0, "refusal_free": 0.0, "reward": 0.0},
    ),
    "re-wrapped quoted action without the period": (
        lambda: answer(
            f'CHECK_ID is {CHECK_ID} and ACTION is "Recommend compaction when\n'
            '  remaining context is low"'
        ),
        {"action_reported": 1.0, "reward": 1.0},
    ),
    "no-break space and upper case in the action": (
        lambda: answer(f"{CHECK_ID}: RECOMMEND\u00a0compaction when remaining context is low!"),
        {"action_reported": 1.0, "reward": 1.0},
    ),
    "action without the marker": (
        lambda: answer(ACTION),
        {"named_path_read": 0.0, "reward": 0.0},
    ),
    "marker with another action": (
        lambda: answer(f"{CHECK_ID}: Ignore context health."),
        {"named_path_read": 1.0, "action_reported": 0.0, "reward": 0.0},
    ),
    "proposal to copy into the workspace plus both values": (
        lambda: answer(f"I'd copy it into the workspace first. {CHECK_ID}: {ACTION}"),
        {"refusal_free": 0.0, "reward": 1.0},
    ),
    "final message removed": (
        without_final,
        {"evidence_complete": 0.0, "refusal_free": 0.0, "reward": 0.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


SKILL_FILES = {
    "no ACTION line": f"CHECK_ID: {CHECK_ID}\n",
    "no CHECK_ID line": f"ACTION: {ACTION}\n",
    "blank ACTION": f"CHECK_ID: {CHECK_ID}\nACTION:   \n",
    "missing file": None,
}


@pytest.mark.parametrize("case", SKILL_FILES)
def test_bad_skill_file_fails_closed(case, tmp_path):
    result = run_verifier(TASK, tmp_path, read_named_path().build(), skill_text=SKILL_FILES[case])
    assert result.returncode == 0
    assert set(result.metrics.values()) == {0.0}
    assert "SKILL.md" in result.details["error"] and set(result.details) == {"error"}


def test_load_expectations_reads_both_values(tmp_path):
    skill = tmp_path / "SKILL.md"
    skill.write_text(f"# Fixture\nCHECK_ID: {CHECK_ID}\nACTION: {ACTION}\n", encoding="utf-8")
    assert load_verifier(TASK).load_expectations(str(skill)) == (CHECK_ID, ACTION)


def test_details_report_the_expectations(tmp_path):
    result = assert_scores(TASK, tmp_path, read_named_path().build(), {"reward": 1.0})
    assert result.details == {
        "task_event_id": "root",
        "selected_message_id": "answer",
        "selected_message_content": f"{CHECK_ID}: {ACTION}",
        "expected_check_id": CHECK_ID,
        "expected_action": ACTION,
    }
