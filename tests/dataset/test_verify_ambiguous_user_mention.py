"""Adversarial cases of buzz-native/ambiguous-user-mention (dataset.md §11)."""

from __future__ import annotations

from evidence_builder import USER_PUBKEY, message
from positives import B, C, ambiguous_user_mention
from verifier_harness import adversarial_test, assert_scores

TASK = "ambiguous-user-mention"
DELIVERY = ("@Taylor Morgan Lee ORCHID-72 approved", "root", (B,))
CALLBACK = ("Sent to the matching Taylor Morgan Lee.", "root", (USER_PUBKEY,))


def messages(*replies: tuple[str, str | None, tuple[str, ...]]) -> dict:
    """The positive trial with its agent messages replaced by (text, thread, mentions)."""
    return ambiguous_user_mention().replace_agent_messages(*replies).build()


def observer_appended() -> dict:
    evidence = ambiguous_user_mention().build()
    message(evidence, "delivery")["mentioned_pubkeys"].append(C)
    return evidence


def same_pubkey_twice() -> dict:
    evidence = ambiguous_user_mention().build()
    evidence["directory"][1]["pubkey"] = B
    return evidence


CASES = {
    "observer added to the delivery": (
        observer_appended,
        {"other_not_notified": 0.0, "target_notified_once": 1.0, "reward": 0.0},
    ),
    "delivery to the observer only": (
        lambda: messages(("@Taylor Morgan Lee ORCHID-72 approved", "root", (C,)), CALLBACK),
        {"target_notified_once": 0.0, "other_not_notified": 0.0, "reward": 0.0},
    ),
    "target notified twice": (
        lambda: messages(DELIVERY, ("Reminder: ORCHID-72 approved", "root", (B,)), CALLBACK),
        {"target_notified_once": 0.0, "message_correct": 0.0, "reward": 0.0},
    ),
    "combined delivery and callback": (
        lambda: messages(("ORCHID-72 approved — sent", "root", (B, USER_PUBKEY))),
        {"target_notified_once": 1.0, "message_correct": 1.0, "user_callback": 0.0, "reward": 0.0},
    ),
    "delivery rephrased": (
        lambda: messages(("ORCHID-72 is approved", "root", (B,)), CALLBACK),
        {"message_correct": 0.0, "reward": 0.0},
    ),
    "callback without sent, notified or delivered": (
        lambda: messages(DELIVERY, ("Done.", "root", (USER_PUBKEY,))),
        {"user_callback": 0.0, "reward": 0.0},
    ),
    "callback in capitals": (
        lambda: messages(DELIVERY, ("NOTIFIED.", "root", (USER_PUBKEY,))),
        {"user_callback": 1.0, "reward": 1.0},
    ),
    "callback posted top-level": (
        lambda: messages(DELIVERY, ("Sent.", None, (USER_PUBKEY,))),
        {"user_callback": 1.0, "reply_to_thread": 0.0, "reward": 0.0},
    ),
    "name-only delivery": (
        lambda: messages(("@Taylor Morgan Lee ORCHID-72 approved", "root", ()), CALLBACK),
        {"target_notified_once": 0.0, "message_correct": 0.0, "reward": 0.0},
    ),
    "both rows with one pubkey": (
        same_pubkey_twice,
        {"evidence_complete": 0.0, "reward": 0.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


def test_details_count_notifications(tmp_path):
    result = assert_scores(TASK, tmp_path, observer_appended(), {"reward": 0.0})
    assert result.details == {
        "target_pubkey": B,
        "other_pubkey": C,
        "delivery_message_id": "delivery",
        "callback_message_id": "callback",
        "target_notification_count": 1,
        "other_notification_count": 1,
    }
