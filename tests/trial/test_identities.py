"""Stable fixture identities: the derivation test vectors of orchestrator.md §5.7."""

import pytest

from orchestra.nostr.keys import Keys
from orchestra.trial.identities import derive_fixture_keys, trial_user

OWNER = bytes([0x11]) * 32


@pytest.mark.parametrize(
    ("identity_id", "secret", "pubkey"),
    [
        (
            "Aurora Audit Bot",
            "b9bfcf72eedb4568f46c89c6214c3b7899a6eb2a4d5061515f4e23215f38e4a2",
            "20d4df41ebb5c92dd54951a37a6119a205c6d5115bc79c5a9a36aad0747f2dcf",
        ),
        (
            "taylor-release-captain",
            "b78a375498a0f6f81ba78cff3d0163077889eefcbea40fb8e963c69d240a8035",
            "9ec0436097bcd70ad50742b71e3b209837e5816d33ed6522d931113075009c33",
        ),
        (
            "task-user:user-mention",
            "6d829f96efd3a38e7ea1d125695bbd1cac1162d103dc358606ec3238a277dbef",
            "1cafe238a0aa63657c39fbfde398da6f4bdbbbd3c05fe09f3b591b02827b2b3a",
        ),
    ],
)
def test_derivation_vectors(identity_id: str, secret: str, pubkey: str) -> None:
    keys = derive_fixture_keys(OWNER, identity_id)
    assert keys.secret_hex == secret
    assert keys.pubkey == pubkey


def test_owner_pubkey_vector() -> None:
    assert (
        Keys.from_secret(OWNER).pubkey
        == "4f355bdcb7cc0af728ef3cceb9615d90684bb5b2ca5f859ab0f0b704075871aa"
    )


def test_trial_user_is_task_specific_only_with_a_display_name() -> None:
    pinned = bytes([0x22]) * 32
    named = trial_user(
        owner_secret=OWNER,
        user_secret=pinned,
        short_name="user-mention",
        user_display_name="Maya Elise Chen",
    )
    assert named.name == "Maya Elise Chen"
    assert named.pubkey == "1cafe238a0aa63657c39fbfde398da6f4bdbbbd3c05fe09f3b591b02827b2b3a"
    default = trial_user(
        owner_secret=OWNER, user_secret=pinned, short_name="user-mention", user_display_name=None
    )
    assert default.name == "user"
    assert default.pubkey == Keys.from_secret(pinned).pubkey
