"""Adversarial cases of buzz-native/interleaved-agent-reports (dataset.md §9)."""

from __future__ import annotations

from evidence_builder import USER_PUBKEY
from positives import FORECAST_ANSWER, B, interleaved_agent_reports
from verifier_harness import adversarial_test, assert_scores

TASK = "interleaved-agent-reports"


def final(text: str, *, reply_to: str | None = "root", mentions=(USER_PUBKEY,)) -> dict:
    return (
        interleaved_agent_reports()
        .rewrite_answer(text, reply_to=reply_to, mentions=mentions)
        .build()
    )


def before_answer(text: str, mentions: tuple[str, ...]) -> dict:
    return interleaved_agent_reports().agent_before_answer(text, mentions=mentions).build()


def report_not_delivered() -> dict:
    evidence = interleaved_agent_reports().build()
    evidence["messages"] = [m for m in evidence["messages"] if m["id"] != "report-2"]
    return evidence


def two_scripted_rows() -> dict:
    evidence = interleaved_agent_reports().build()
    evidence["scripted_events"].pop()
    return evidence


def null_event_id() -> dict:
    evidence = interleaved_agent_reports().build()
    evidence["scripted_events"][0]["event_id"] = None
    return evidence


CASES = {
    "inputs missing": (
        lambda: final("North 17; final forecast 87."),
        {"inputs_complete": 0.0, "answer_correct": 1.0, "reward": 0.0},
    ),
    "reporter thanked with a p tag": (
        lambda: before_answer("@Ledger Scout thanks", (B,)),
        {"reporters_not_rementioned": 0.0, "reward": 0.0},
    ),
    "reporter named with @ but no p tag": (
        lambda: final(FORECAST_ANSWER + "\nThanks @Risk Sentinel."),
        {"reporters_not_rementioned": 0.0, "reward": 0.0},
    ),
    "scripted event missing from messages": (
        report_not_delivered,
        {"reports_delivered": 0.0, "reward": 0.0},
    ),
    "only two scripted rows": (two_scripted_rows, {"reports_delivered": 0.0, "reward": 0.0}),
    "scripted event id null": (null_event_id, {"reports_delivered": 0.0, "reward": 0.0}),
    "forecast 870": (
        lambda: final(FORECAST_ANSWER.replace("**87**", "870")),
        {"answer_correct": 0.0, "reward": 0.0},
    ),
    "forecast = 8": (
        lambda: final(FORECAST_ANSWER.replace("**87**", "8")),
        {"answer_correct": 0.0, "reward": 0.0},
    ),
    "two messages both calling the user back": (
        lambda: before_answer("Waiting for the reports.", (USER_PUBKEY,)),
        {"single_human_callback": 0.0, "evidence_complete": 0.0, "reward": 0.0},
    ),
    "final without the user's p tag": (
        lambda: final(FORECAST_ANSWER, mentions=()),
        {"single_human_callback": 0.0, "reward": 0.0},
    ),
    "posted top-level": (
        lambda: final(FORECAST_ANSWER, reply_to=None),
        {"reply_to_thread": 0.0, "reward": 0.0},
    ),
    "plain-words answer": (
        lambda: final("North 17, South 23, reserve 11, multiplier 3. Result: 87"),
        {"inputs_complete": 1.0, "answer_correct": 1.0, "reward": 1.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


def test_details_of_the_positive_fixture(tmp_path):
    result = assert_scores(TASK, tmp_path, interleaved_agent_reports().build(), {"reward": 1.0})
    assert result.details == {
        "scripted_event_ids": ["report-1", "report-2", "report-3"],
        "selected_message_id": "answer",
        "content": FORECAST_ANSWER,
        "mentioned_pubkeys": [USER_PUBKEY],
    }
