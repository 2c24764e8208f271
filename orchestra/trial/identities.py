"""Trial identities: fresh agent keys and stable fixture identities (orchestrator.md §5.7)."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from orchestra.nostr.keys import Keys

CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
DIRECTORY_DOMAIN = b"buzz-benchmark-directory-v1"
PINNED_USER_NAME = "user"


def derive_fixture_secret(owner_secret: bytes, identity_id: str) -> bytes:
    """The stable secret of a directory identity or task user; same pubkey in every trial."""
    digest = hashlib.sha256(
        DIRECTORY_DOMAIN + b"\x00" + owner_secret + b"\x00" + identity_id.encode("utf-8")
    ).digest()
    return ((int.from_bytes(digest, "big") % (CURVE_ORDER - 1)) + 1).to_bytes(32, "big")


@functools.lru_cache(maxsize=4096)
def derive_fixture_keys(owner_secret: bytes, identity_id: str) -> Keys:
    """Cached: the same identities are minted at every trial of a task (60 for some)."""
    return Keys.from_secret(derive_fixture_secret(owner_secret, identity_id))


def task_user_identity_id(short_name: str) -> str:
    return f"task-user:{short_name}"


@dataclass(frozen=True)
class Identity:
    """A named actor of a trial. `keys` holds the secret; never serialise it."""

    name: str
    role: str
    keys: Keys

    @property
    def pubkey(self) -> str:
        return self.keys.pubkey


def trial_user(
    *, owner_secret: bytes, user_secret: bytes, short_name: str, user_display_name: str | None
) -> Identity:
    """The task-specific stable user when the fixture names one, else the pinned user."""
    if user_display_name:
        keys = derive_fixture_keys(owner_secret, task_user_identity_id(short_name))
        return Identity(name=user_display_name, role="user", keys=keys)
    return Identity(name=PINNED_USER_NAME, role="user", keys=Keys.from_secret(user_secret))
