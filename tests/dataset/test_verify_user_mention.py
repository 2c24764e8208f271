"""Adversarial cases of buzz-native/user-mention (dataset.md §4)."""

from __future__ import annotations

from evidence_builder import USER_PUBKEY, message
from positives import user_mention
from verifier_harness import adversarial_test, assert_scores

TASK = "user-mention"


def answer(text: str, *, mentions: tuple[str, ...] = (USER_PUBKEY,)) -> dict:
    return user_mention().rewrite_answer(text, mentions=mentions).build()


def forged_mention() -> dict:
    evidence = answer("The annual cost is $5,328.", mentions=())
    message(evidence, "answer")["mentioned_pubkeys"] = [USER_PUBKEY]
    return evidence


def user_keyed(name: str) -> dict:
    evidence = user_mention().build()
    evidence["identities"][name] = evidence["identities"].pop("John Vincent Doe")
    return evidence


def two_users() -> dict:
    evidence = user_mention().build()
    evidence["identities"]["Jane Doe"] = {"role": "user", "pubkey": "9" * 64}
    return evidence


def earlier_mention_only() -> dict:
    trial = user_mention()
    trial.agent("The annual cost is $5,328.", event_id="later")
    return trial.build()


CASES = {
    "visible name without a p tag": (
        lambda: answer("@John Vincent Doe, the annual cost is $5,328.", mentions=()),
        {"answer_correct": 1.0, "user_p_tagged": 0.0, "reward": 0.0},
    ),
    "p tag without a visible name": (
        lambda: answer("The total is 5328."),
        {"user_p_tagged": 1.0, "reward": 1.0},
    ),
    "wrong amount with the p tag": (
        lambda: answer("The annual cost is $1."),
        {"user_p_tagged": 1.0, "answer_correct": 0.0, "reward": 0.0},
    ),
    "mentioned_pubkeys forged without a p tag": (
        forged_mention,
        {"user_p_tagged": 0.0, "reward": 0.0},
    ),
    "user keyed John Doe": (
        lambda: user_keyed("John Doe"),
        {"three_word_user": 0.0, "reward": 0.0},
    ),
    "two user identities": (two_users, {"evidence_complete": 0.0, "reward": 0.0}),
    "only an earlier message mentions the user": (
        earlier_mention_only,
        {"user_p_tagged": 0.0, "answer_correct": 1.0, "reward": 0.0},
    ),
    "5,329 is within one": (lambda: answer("It is $5,329."), {"answer_correct": 1.0}),
    "5,330 is not": (lambda: answer("It is $5,330."), {"answer_correct": 0.0, "reward": 0.0}),
}


test_adversarial_case = adversarial_test(TASK, CASES)


def test_details_of_the_positive_fixture(tmp_path):
    result = assert_scores(TASK, tmp_path, user_mention().build(), {"reward": 1.0})
    assert result.details == {
        "task_event_id": "root",
        "selected_message_id": "answer",
        "selected_message_content": "The annual cost is $5,328.",
        "user_display_name": "John Vincent Doe",
        "user_pubkey": USER_PUBKEY,
        "parsed_numbers": [5328.0],
        "expected_total": 5328.0,
    }
