"""buzz-cli.md §5.1 steps 1-3: content checks, explicit identities and recipient planning (pure)."""

import pytest

from orchestra.buzz.errors import BuzzError
from orchestra.buzz.send_plan import (
    check_content,
    explicit_identities,
    needs_preflight,
    plan_recipients,
)
from orchestra.nostr.bech32 import encode_npub
from orchestra.nostr.keys import Keys

CHANNEL = "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"
ALICE, BOB, BOB2, OUTSIDER = (Keys.generate().pubkey for _ in range(4))
MEMBERS = {ALICE: "owner", BOB: "member", BOB2: "bot"}
PROFILES = {
    ALICE: {"name": "Alice"},
    BOB: {"display_name": "Bob", "about": "finance"},
    BOB2: {"name": "bob", "about": "the bot"},
}


def plan(content: str, explicit: list[str] | None = None) -> list[str]:
    return plan_recipients(CHANNEL, content, explicit or [], MEMBERS, PROFILES)


def refusal(content: str, explicit: list[str] | None = None) -> BuzzError:
    with pytest.raises(BuzzError) as caught:
        plan(content, explicit)
    assert caught.value.error == "user_error"
    assert caught.value.exit_code == 1
    return caught.value


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "message content is empty"),
        (" \n\t ", "message content is empty"),
        ("x" * 100_001, "message content is too long (max 100000 characters)"),
    ],
)
def test_content_refusals(content, message):
    with pytest.raises(BuzzError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_content(content)


def test_content_at_the_limit_is_fine():
    check_content("x" * 100_000)


def test_explicit_identities_normalise_and_deduplicate():
    npub = encode_npub(BOB)
    content = f"cc nostr:{encode_npub(ALICE)} `nostr:{encode_npub(OUTSIDER)}`"
    assert explicit_identities([BOB.upper(), npub], content) == [BOB, ALICE]


def test_invalid_mention_value():
    with pytest.raises(BuzzError, match="invalid --mention"):
        explicit_identities(["nope"], "x")


def test_too_many_mentions():
    many = [Keys.generate().pubkey for _ in range(51)]
    with pytest.raises(BuzzError, match=r"too many mentions \(max 50\)"):
        explicit_identities(many, "x")


def test_no_preflight_for_narrative_text():
    assert not needs_preflight("Aurora Audit Bot completed the audit.", [])
    assert not needs_preflight("mail alice@example.com or `@Alice`", [])
    assert needs_preflight("@Alice done", [])
    assert needs_preflight("done", [ALICE])


def test_resolved_names_in_text_order_deduplicated():
    assert plan("@Alice then @alice") == [ALICE]
    assert plan("(@Alice), cc @Alice") == [ALICE]


def test_unresolved_name_is_refused_with_the_token():
    error = refusal("thanks @Zoe.")
    assert error.message == (
        "mention '@Zoe' does not match a current channel member; retry with --mention <pubkey>"
    )


def test_ambiguous_name_lists_candidates_with_about():
    error = refusal("@Bob please")
    first, second = sorted([BOB, BOB2])
    assert error.message == (
        f"mention '@Bob' is ambiguous; candidates: {first}, {second}; retry with --mention <pubkey>"
    )
    about = {c["pubkey"]: c["about"] for c in error.details["candidates"]}
    assert about == {BOB: "finance", BOB2: "the bot"}


def test_explicit_mention_makes_ambiguous_and_unknown_text_presentational():
    assert plan("@Bob and @Zoe: done", [BOB2]) == [BOB2]


def test_explicit_first_then_uniquely_resolved_names():
    assert plan("@Alice @Bob", [BOB2]) == [BOB2, ALICE]


def test_non_member_mention_is_refused_with_details():
    error = refusal("done", [OUTSIDER])
    assert error.message == (
        f"mentioned pubkeys are not channel members: {OUTSIDER}; "
        "add them with buzz channels add-member or remove the mention"
    )
    assert error.details == {
        "missing_member_pubkeys": [OUTSIDER],
        "add_member_command": (
            f"buzz channels add-member --channel {CHANNEL} --pubkey <pubkey> --role <member|bot>"
        ),
    }


def test_member_without_profile_has_no_label():
    members = {**MEMBERS, OUTSIDER: "member"}
    with pytest.raises(BuzzError, match="does not match"):
        plan_recipients(CHANNEL, "@Nobody", [], members, PROFILES)
    assert plan_recipients(CHANNEL, "hi", [OUTSIDER], members, PROFILES) == [OUTSIDER]
