"""Adversarial cases of buzz-native/narrative-agent-names (dataset.md §8)."""

from __future__ import annotations

from evidence_builder import USER_PUBKEY, message
from positives import B, narrative_agent_names
from verifier_harness import adversarial_test, assert_scores

TASK = "narrative-agent-names"
STATUS = "Aurora Audit Bot completed the audit.\nBeacon Deploy Bot remains idle."


def status(text: str, *, reply_to: str | None = "root", mentions=(USER_PUBKEY,)) -> dict:
    return (
        narrative_agent_names().rewrite_answer(text, reply_to=reply_to, mentions=mentions).build()
    )


def bot_pubkey_appended() -> dict:
    evidence = narrative_agent_names().build()
    message(evidence, "answer")["mentioned_pubkeys"].append(B)
    return evidence


def earlier_wake_up() -> dict:
    trial = narrative_agent_names()
    return trial.agent_before_answer("@Aurora Audit Bot please check", mentions=(B,)).build()


def one_bot_missing() -> dict:
    evidence = narrative_agent_names().build()
    evidence["directory"].pop()
    return evidence


def acknowledged_first() -> dict:
    trial = narrative_agent_names()
    return trial.agent_before_answer("Working on it.", mentions=(USER_PUBKEY,)).build()


CASES = {
    "bot pubkey in the answer's mentions": (
        bot_pubkey_appended,
        {"bots_not_mentioned": 0.0, "reward": 0.0},
    ),
    "earlier message wakes a bot": (
        earlier_wake_up,
        {"bots_not_mentioned": 0.0, "reward": 0.0},
    ),
    "@Name text without a p tag": (
        lambda: status(STATUS.replace("Aurora", "@Aurora")),
        {"bots_not_mentioned": 0.0, "status_correct": 1.0, "reward": 0.0},
    ),
    "swapped statuses": (
        lambda: status("Aurora Audit Bot remains idle.\nBeacon Deploy Bot completed the audit."),
        {"status_correct": 0.0, "reward": 0.0},
    ),
    "status in the next sentence": (
        lambda: status(
            "Aurora Audit Bot is done. It completed the audit.\nBeacon Deploy Bot remains idle."
        ),
        {"status_correct": 0.0, "reward": 0.0},
    ),
    "modifiers between name and status": (
        lambda: status(
            "- aurora audit bot has now COMPLETED it\n- Beacon Deploy Bot is still idle"
        ),
        {"status_correct": 1.0, "reward": 1.0},
    ),
    "without the user's p tag": (
        lambda: status(STATUS, mentions=()),
        {"user_mentioned": 0.0, "reward": 0.0},
    ),
    "posted top-level": (
        lambda: status(STATUS, reply_to=None),
        {"reply_to_thread": 0.0, "reward": 0.0},
    ),
    "directory missing one bot": (
        one_bot_missing,
        {"bots_not_mentioned": 0.0, "evidence_complete": 0.0, "reward": 0.0},
    ),
    "acknowledgement and answer": (
        acknowledged_first,
        {"evidence_complete": 0.0, "status_correct": 1.0, "reward": 0.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


def test_details_of_a_wake_up(tmp_path):
    result = assert_scores(TASK, tmp_path, bot_pubkey_appended(), {"reward": 0.0})
    assert result.details == {
        "selected_message_id": "answer",
        "content": STATUS,
        "mentioned_pubkeys": sorted([USER_PUBKEY, B]),
    }
