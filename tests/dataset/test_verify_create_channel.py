"""Adversarial cases of buzz-native/create-channel-invite-users (dataset.md §6)."""

from __future__ import annotations

import copy

from evidence_builder import AGENT_PUBKEY, USER_PUBKEY
from positives import CHANNEL_TARGETS, create_channel, directory_pubkey
from verifier_harness import adversarial_test, assert_scores

TASK = "create-channel-invite-users"


def with_channel(**changes: object) -> dict:
    evidence = create_channel().build()
    evidence["observed_channels"][0].update(changes)
    return evidence


def with_members(edit) -> dict:
    evidence = create_channel().build()
    members = evidence["observed_channels"][0]["members"]
    edit(members)
    return evidence


def role_of(name: str, role: str):
    def edit(members: list) -> None:
        next(m for m in members if m["pubkey"] == directory_pubkey(name))["role"] = role

    return edit


def swap_user(members: list) -> None:
    row = next(m for m in members if m["pubkey"] == directory_pubkey("benchmark-user-07"))
    row["pubkey"] = directory_pubkey("benchmark-user-17")


def two_channels() -> dict:
    evidence = create_channel().build()
    evidence["observed_channels"].append(copy.deepcopy(evidence["observed_channels"][0]))
    evidence["observed_channels"][1]["channel_id"] = "channel-2"
    return evidence


def short_directory() -> dict:
    evidence = create_channel().build()
    evidence["directory"].pop(0)
    return evidence


def no_channels() -> dict:
    evidence = create_channel().build()
    evidence["observed_channels"] = []
    return evidence


CASES = {
    "an extra member": (
        lambda: with_members(lambda m: m.append({"pubkey": "f" * 64, "role": "member"})),
        {"channel_created": 1.0, "exact_membership": 0.0, "reward": 0.0},
    ),
    "the trial user added": (
        lambda: with_members(lambda m: m.append({"pubkey": USER_PUBKEY, "role": "member"})),
        {"exact_membership": 0.0, "reward": 0.0},
    ),
    "a target bot with role member": (
        lambda: with_members(role_of("benchmark-bot-03", "member")),
        {"exact_membership": 1.0, "expected_roles": 0.0, "reward": 0.0},
    ),
    "the agent is not the owner": (
        lambda: with_members(lambda m: m[0].update(role="admin")),
        {"exact_membership": 1.0, "expected_roles": 0.0, "reward": 0.0},
    ),
    "permanent channel": (
        lambda: with_channel(ttl_seconds=None),
        {"temporary_channel": 0.0, "reward": 0.0},
    ),
    "two-hour channel": (lambda: with_channel(ttl_seconds=7200), {"temporary_channel": 0.0}),
    "ttl written as a string": (
        lambda: with_channel(ttl_seconds="3600"),
        {"temporary_channel": 0.0},
    ),
    "two channels named fix-pr-1234": (
        two_channels,
        {"channel_created": 0.0, "reward": 0.0},
    ),
    "open visibility": (lambda: with_channel(visibility="open"), {"channel_shape": 0.0}),
    "forum channel": (lambda: with_channel(channel_type="forum"), {"channel_shape": 0.0}),
    "archived channel": (lambda: with_channel(archived=True), {"channel_shape": 0.0}),
    "archived missing": (lambda: with_channel(archived=None), {"channel_shape": 0.0}),
    "member row listed twice": (
        lambda: with_members(lambda m: m.append(dict(m[1]))),
        {"exact_membership": 0.0, "reward": 0.0},
    ),
    "benchmark-user-17 instead of 07": (
        lambda: with_members(swap_user),
        {"exact_membership": 0.0, "reward": 0.0},
    ),
    "directory with 59 rows": (short_directory, {"evidence_complete": 0.0, "reward": 0.0}),
    "no observed channels": (
        no_channels,
        {"channel_created": 0.0, "channel_shape": 0.0, "temporary_channel": 0.0, "reward": 0.0},
    ),
}


test_adversarial_case = adversarial_test(TASK, CASES)


def test_two_channels_are_counted(tmp_path):
    result = assert_scores(TASK, tmp_path, two_channels(), {"channel_created": 0.0})
    assert result.details["matching_channel_count"] == 2
    assert result.details["channel_id"] is None


def test_details_list_expected_and_actual_members(tmp_path):
    result = assert_scores(TASK, tmp_path, create_channel().build(), {"reward": 1.0})
    expected = {directory_pubkey(name): role for name, role in CHANNEL_TARGETS.items()}
    expected[AGENT_PUBKEY] = "owner"
    assert result.details == {
        "matching_channel_count": 1,
        "channel_id": "channel-1",
        "expected_members": expected,
        "actual_members": expected,
    }
