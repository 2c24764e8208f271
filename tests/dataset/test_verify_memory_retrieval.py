"""Adversarial cases of buzz-native/memory-retrieval (dataset.md §12), which reproduces
upstream's verifier: exact number, no noise numbers, last threaded reply is the answer."""

from __future__ import annotations

import tomllib

import pytest
from evidence_builder import USER_PUBKEY, message
from positives import memory_retrieval
from verifier_harness import TASKS_ROOT, adversarial_test, assert_scores, load_verifier

TASK = "memory-retrieval"
QUESTION = "memory-question"
ALL_ONE = {"answer_correct": 1.0, "threaded_reply": 1.0, "evidence_complete": 1.0, "reward": 1.0}
WRONG = {"answer_correct": 0.0, "threaded_reply": 1.0, "evidence_complete": 1.0, "reward": 0.0}
DISTRACTORS = (361250, 351340, 2400, 325401, 3710, 21604)
SEEDS = {
    "total-customers-per-month": "We average 361,250 customers per month.",
    "customer-value-metric": "Last month we had 351,340 customers with a $2400 revenue per customer",
    "customers-metrics-spring-24": (
        "In March, we had 325,401 total customers. In April, we had 3,710 active customers named John."
    ),
    "new-customers-april-2024": "There are 21,604 new customers in April 2024.",
    "total-customers-metric": "In April 2024, we had 352,345 total customers.",
}


def answer(text: str, *, reply_to: str | None = QUESTION, **options) -> dict:
    return memory_retrieval().rewrite_answer(text, reply_to=reply_to, **options).build()


def followed_by(text: str, reply_to: str | None) -> dict:
    trial = memory_retrieval()
    trial.agent(text, event_id="later", reply_to=reply_to)
    return trial.build()


def authored_by_user() -> dict:
    trial = memory_retrieval()
    trial.events[-1]["pubkey"] = USER_PUBKEY
    return trial.build()


def null_question() -> dict:
    evidence = answer("We had 352,345 total customers in April 2024.")
    evidence["task_event_id"] = None
    message(evidence, "answer")["reply_to_event_id"] = None
    return evidence


def trial_without_channel() -> dict:
    evidence = memory_retrieval().build()
    del evidence["trial"]["channel_id"]
    return evidence


def truncated() -> dict:
    evidence = memory_retrieval().build()
    evidence["truncated"] = True
    return evidence


CASES = {
    **{
        f"correct: {text}": (lambda text=text: answer(text), ALL_ONE)
        for text in (
            "352,345",
            "We had 352,345 total customers in April 2024.",
            "April 2024 total customers: 352345",
        )
    },
    **{
        f"wrong: {text}": (lambda text=text: answer(text), WRONG)
        for text in (
            "361,250",
            "351,340",
            "$2,400 revenue per customer",
            "325,401",
            "3,710",
            "21,604",
            "352,344",
            "352,346",
            "352,000",
            "About 352 thousand",
            "Approximately 352.3 thousand",
        )
    },
    "answer to another question": (
        lambda: answer("We had 352,345 total customers.", reply_to="wrong-question"),
        {"threaded_reply": 0.0, "answer_correct": 0.0, "reward": 0.0},
    ),
    "answer in another channel": (
        lambda: answer("We had 352,345 total customers.", channel="other"),
        {"threaded_reply": 0.0, "reward": 0.0},
    ),
    "later top-level message": (lambda: followed_by("Anything else?", None), ALL_ONE),
    "later threaded reply": (
        lambda: followed_by("Let me know if you need more.", QUESTION),
        {"answer_correct": 0.0, "reward": 0.0},
    ),
    "no p tag at all": (
        lambda: answer("We had 352,345 total customers in April 2024.", mentions=()),
        ALL_ONE,
    ),
    "authored by the user": (authored_by_user, {"threaded_reply": 0.0, "reward": 0.0}),
    "null question and null reply": (
        null_question,
        {"threaded_reply": 1.0, "evidence_complete": 0.0, "reward": 0.0},
    ),
    "trial without channel_id": (
        trial_without_channel,
        {"evidence_complete": 0.0, "threaded_reply": 0.0, "reward": 0.0},
    ),
    "truncated snapshot": (
        truncated,
        {"answer_correct": 1.0, "evidence_complete": 0.0, "reward": 0.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


NOISE = [
    *(
        (f"We had 352,345 total customers. Another relevant count was {d:,}.", d, True)
        for d in DISTRACTORS
    ),
    *(
        (f"We had 352,345 total customers, approximately {n:,}.", n, False)
        for n in (352000, 999999)
    ),
]


@pytest.mark.parametrize(("text", "noise", "is_distractor"), NOISE)
def test_a_second_number_next_to_the_answer_is_noise(text, noise, is_distractor, tmp_path):
    result = assert_scores(TASK, tmp_path, answer(text), {"answer_correct": 0.0})
    assert result.details["mentions_expected"] is True
    assert result.details["mentions_distractor"] is is_distractor
    assert result.details["noise_numbers"] == [float(noise)]


def test_later_top_level_message_leaves_the_answer_selected(tmp_path):
    result = assert_scores(TASK, tmp_path, followed_by("Anything else?", None), ALL_ONE)
    assert result.details["answer_message_id"] == "answer"


def test_details_of_the_positive_fixture(tmp_path):
    result = assert_scores(TASK, tmp_path, memory_retrieval().build(), ALL_ONE)
    assert result.details == {
        "question_event_id": QUESTION,
        "question_channel_id": "ch",
        "answer_message_id": "answer",
        "answer_content": "We had 352,345 total customers in April 2024.",
        "parsed_numbers": [352345.0, 2024.0],
        "expected_customers": 352345,
        "mentions_expected": True,
        "mentions_distractor": False,
        "noise_numbers": [],
        "allowed_context_numbers": [2024],
        "distractor_numbers": [2400, 3710, 21604, 325401, 351340, 361250],
    }


def test_constants_agree_with_the_memory_seeds():
    verifier = load_verifier(TASK)
    assert verifier.EXPECTED_CUSTOMERS == 352345
    holders = [slug for slug, value in SEEDS.items() if "352,345" in value]
    assert holders == ["total-customers-metric"]
    others = [value for slug, value in SEEDS.items() if slug != "total-customers-metric"]
    numbers = {number for value in others for number in verifier._numbers(value)}
    assert verifier.DISTRACTOR_NUMBERS == numbers - set(verifier.ALLOWED_CONTEXT_NUMBERS)


def test_fixture_seeds_and_instruction_match_the_verifier():
    task_dir = TASKS_ROOT / TASK
    fixture = tomllib.loads((task_dir / "buzz-fixture.toml").read_text(encoding="utf-8"))
    assert {seed["slug"]: seed["value"] for seed in fixture["memory_seeds"]} == SEEDS
    instruction = (task_dir / "instruction.md").read_text(encoding="utf-8")
    assert "352,345" not in instruction and "352345" not in instruction.replace(",", "")
