"""Adversarial cases of buzz-native/reply-to-thread (dataset.md §3)."""

from __future__ import annotations

import pytest
from evidence_builder import ROOT_ID, USER_PUBKEY, message
from positives import PROJECTION_ANSWER, reply_to_thread
from verifier_harness import adversarial_test, assert_scores, load_verifier

TASK = "reply-to-thread"


def answer_in_thread(text: str) -> dict:
    return reply_to_thread().rewrite_answer(text).build()


def top_level_answer() -> dict:
    return reply_to_thread().rewrite_answer(PROJECTION_ANSWER, reply_to=None).build()


def reply_to_unrelated_event() -> dict:
    return reply_to_thread().rewrite_answer(PROJECTION_ANSWER, reply_to="unrelated-event").build()


def forged_reply_field() -> dict:
    evidence = top_level_answer()
    message(evidence, "answer")["reply_to_event_id"] = ROOT_ID
    return evidence


def later_top_level_message() -> dict:
    trial = reply_to_thread()
    trial.agent("Anything else?", event_id="later", reply_to=None)
    return trial.build()


def authored_by_user() -> dict:
    trial = reply_to_thread()
    trial.events[-1]["pubkey"] = USER_PUBKEY
    return trial.build()


def root_twice() -> dict:
    evidence = reply_to_thread().build()
    evidence["messages"].insert(1, dict(evidence["messages"][0]))
    return evidence


def without_channel_tag() -> dict:
    evidence = reply_to_thread().build()
    answer = message(evidence, "answer")
    answer["tags"] = [tag for tag in answer["tags"] if tag[0] != "h"]
    return evidence


WORK_TABLE = (
    "Month 5: 153,153 / 82,806\nMonth 6: 160,811 / 84,462\nCumulative operating profit: $412,900"
)
BULLETS = (
    "- Month 6 revenue: $160,811\n- Month 6 expenses: $84,462\n"
    "- Cumulative operating profit (months 1-6): $374,470"
)
CASES = {
    "correct answer top-level": (
        top_level_answer,
        {"answer_correct": 1.0, "reply_to_thread": 0.0, "reward": 0.0},
    ),
    "wrong numbers in the thread": (
        lambda: answer_in_thread("Revenue $1, expenses $2, profit $3"),
        {"reply_to_thread": 1.0, "answer_correct": 0.0, "reward": 0.0},
    ),
    "work table with a wrong stated answer": (
        lambda: answer_in_thread(WORK_TABLE),
        {"answer_correct": 0.0, "reward": 0.0},
    ),
    "labelled bullet list": (
        lambda: answer_in_thread(BULLETS),
        {"answer_correct": 1.0, "reward": 1.0},
    ),
    "labels and amounts on CRLF and Unicode line separators": (
        lambda: answer_in_thread(BULLETS.replace("\n", "\r\n", 1).replace("\n- C", "\u2028- C")),
        {"answer_correct": 1.0, "reward": 1.0},
    ),
    "reply to an unrelated event": (
        reply_to_unrelated_event,
        {"answer_correct": 1.0, "reply_to_thread": 0.0, "reward": 0.0},
    ),
    "reply_to_event_id forged without the e tag": (
        forged_reply_field,
        {"reply_to_thread": 0.0, "reward": 0.0},
    ),
    "later top-level agent message is scored": (
        later_top_level_message,
        {"reply_to_thread": 0.0, "answer_correct": 0.0, "reward": 0.0},
    ),
    "answer authored by the user": (
        authored_by_user,
        {"evidence_complete": 0.0, "expected_author": 0.0, "reward": 0.0},
    ),
    "root event listed twice": (root_twice, {"evidence_complete": 0.0, "reward": 0.0}),
    "answer without the h tag": (without_channel_tag, {"same_channel": 0.0, "reward": 0.0}),
    "amount off by 2": (
        lambda: answer_in_thread(PROJECTION_ANSWER.replace("160,811", "160,813")),
        {"answer_correct": 0.0, "reward": 0.0},
    ),
    "amount off by 1": (
        lambda: answer_in_thread(PROJECTION_ANSWER.replace("160,811", "160,812")),
        {"answer_correct": 1.0, "reward": 1.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


def test_later_top_level_message_is_the_selected_one(tmp_path):
    result = assert_scores(TASK, tmp_path, later_top_level_message(), {"reward": 0.0})
    assert result.details["selected_message_id"] == "later"
    assert result.details["selected_message_content"] == "Anything else?"


def test_details_of_the_positive_fixture(tmp_path):
    result = assert_scores(TASK, tmp_path, reply_to_thread().build(), {"reward": 1.0})
    assert result.details == {
        "task_event_id": ROOT_ID,
        "selected_message_id": "answer",
        "selected_message_content": PROJECTION_ANSWER,
        "parsed_numbers": [6.0, 160811.0, 6.0, 84462.0, 374470.0],
        "expected_amounts": [160811.0, 84462.0, 374470.0],
    }


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("$160,811; month 6", [160811.0, 6.0]),
        ("352.3 thousand", [352.3]),
        ("Q2", []),
        ("months 1-6", [1.0, 6.0]),
        ("٥٣٢٨", [5328.0]),
        ("-$5 and x7, y-8", [-5.0, 8.0]),
    ],
)
def test_number_parser_examples(text, numbers):
    assert load_verifier(TASK).parse_numbers(text) == numbers
