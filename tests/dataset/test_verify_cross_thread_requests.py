"""Adversarial cases of buzz-native/cross-thread-requests (dataset.md §10)."""

from __future__ import annotations

from evidence_builder import USER_PUBKEY
from positives import cross_thread_requests
from verifier_harness import adversarial_test, assert_scores

TASK = "cross-thread-requests"


def answers(*replies: tuple[str, str | None, tuple[str, ...]]) -> dict:
    """The positive trial with its agent messages replaced by (text, thread, mentions)."""
    return cross_thread_requests().replace_agent_messages(*replies).build()


MENTION = (USER_PUBKEY,)
ALPHA_OK = ("ALPHA result: 346", "root", MENTION)
BETA_OK = ("BETA result: 41", "beta-root", MENTION)


def no_beta_row() -> dict:
    evidence = cross_thread_requests().build()
    evidence["scripted_events"] = []
    return evidence


CASES = {
    "one combined message in the BETA thread": (
        lambda: answers(("ALPHA 346; BETA 41", "beta-root", MENTION)),
        {"thread_isolation": 0.0, "reward": 0.0},
    ),
    "a third agent message": (
        lambda: answers(ALPHA_OK, BETA_OK, ("Both requests handled", "root", ())),
        {"alpha_correct": 1.0, "beta_correct": 1.0, "thread_isolation": 0.0, "reward": 0.0},
    ),
    "answers in each other's threads": (
        lambda: answers(
            ("ALPHA result: 346", "beta-root", MENTION), ("BETA result: 41", "root", MENTION)
        ),
        {"alpha_correct": 0.0, "beta_correct": 0.0, "reward": 0.0},
    ),
    "ALPHA 3460": (
        lambda: answers(("ALPHA result: 3460", "root", MENTION), BETA_OK),
        {"alpha_correct": 0.0, "reward": 0.0},
    ),
    "digits between label and value": (
        lambda: answers(("ALPHA: (13 * 26) + 8 = 346", "root", MENTION), BETA_OK),
        {"alpha_correct": 0.0, "reward": 0.0},
    ),
    "BETA answer without the p tag": (
        lambda: answers(ALPHA_OK, ("BETA result: 41", "beta-root", ())),
        {"beta_correct": 1.0, "user_mentioned_twice": 0.0, "reward": 0.0},
    ),
    "no beta-request row": (
        no_beta_row,
        {"evidence_complete": 0.0, "beta_correct": 0.0, "reward": 0.0},
    ),
    "ALPHA answer says BETA pending": (
        lambda: answers(("ALPHA result: 346 (BETA pending)", "root", MENTION), BETA_OK),
        {"alpha_correct": 1.0, "thread_isolation": 0.0, "reward": 0.0},
    ),
    "lower-case labels": (
        lambda: answers(("alpha = 346", "root", MENTION), ("beta is 41.", "beta-root", MENTION)),
        {"alpha_correct": 1.0, "beta_correct": 1.0, "reward": 1.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


def test_details_of_the_positive_fixture(tmp_path):
    result = assert_scores(TASK, tmp_path, cross_thread_requests().build(), {"reward": 1.0})
    assert result.details == {
        "alpha_root": "root",
        "beta_root": "beta-root",
        "alpha_message_id": "alpha-answer",
        "beta_message_id": "beta-answer",
        "alpha_content": "ALPHA result: 346",
        "beta_content": "BETA result: 41",
    }


def test_absent_answers_have_empty_contents(tmp_path):
    result = assert_scores(TASK, tmp_path, answers(), {"alpha_correct": 0.0, "beta_correct": 0.0})
    assert result.details["alpha_content"] == result.details["beta_content"] == ""
    assert result.details["alpha_message_id"] is None
