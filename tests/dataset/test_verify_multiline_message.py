"""Adversarial cases of buzz-native/multiline-message (dataset.md §7)."""

from __future__ import annotations

from evidence_builder import USER_PUBKEY
from positives import MULTILINE_NOTE, multiline_message
from verifier_harness import adversarial_test, assert_scores, load_verifier

TASK = "multiline-message"


def note(text: str, *, reply_to: str | None = "root", mentions=(USER_PUBKEY,)) -> dict:
    return multiline_message().rewrite_answer(text, reply_to=reply_to, mentions=mentions).build()


def split_over_two() -> dict:
    trial = multiline_message()
    trial.events.pop()
    head, tail = MULTILINE_NOTE.split("\n\nOwner")
    trial.agent(head, mentions=(USER_PUBKEY,))
    trial.agent("Owner" + tail, mentions=(USER_PUBKEY,))
    return trial.build()


def acknowledged_first() -> dict:
    return multiline_message().agent_before_answer("On it.", mentions=(USER_PUBKEY,)).build()


CASES = {
    "escaped newlines": (
        lambda: note(MULTILINE_NOTE.replace("\n", "\\n")),
        {"real_newlines": 0.0, "reward": 0.0},
    ),
    "carriage returns instead of newlines": (
        lambda: note(MULTILINE_NOTE.replace("\n", "\r")),
        {"real_newlines": 0.0, "layout_preserved": 0.0, "reward": 0.0},
    ),
    "blank lines collapsed": (
        lambda: note(MULTILINE_NOTE.replace("\n\n", "\n")),
        {"layout_preserved": 0.0, "reward": 0.0},
    ),
    "split over two messages": (split_over_two, {"evidence_complete": 0.0, "reward": 0.0}),
    "acknowledgement before the note": (
        acknowledged_first,
        {"evidence_complete": 0.0, "layout_preserved": 1.0, "reward": 0.0},
    ),
    "posted top-level": (
        lambda: note(MULTILINE_NOTE, reply_to=None),
        {"reply_to_thread": 0.0, "reward": 0.0},
    ),
    "without the user's p tag": (
        lambda: note(MULTILINE_NOTE, mentions=()),
        {"user_mentioned": 0.0, "reward": 0.0},
    ),
    "greeting line before the note": (
        lambda: note("@Eleanor June Brooks\n" + MULTILINE_NOTE),
        {"reward": 1.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


def test_expected_block_is_the_instruction_note():
    expected = load_verifier(TASK).EXPECTED
    assert expected == MULTILINE_NOTE
    assert expected.count("\n") == 6 and not expected.endswith("\n")


def test_details_of_the_positive_fixture(tmp_path):
    result = assert_scores(TASK, tmp_path, multiline_message().build(), {"reward": 1.0})
    assert result.details == {
        "selected_message_id": "answer",
        "content": MULTILINE_NOTE,
        "tags": [["h", "ch"], ["e", "root", "", "reply"], ["p", USER_PUBKEY]],
    }
