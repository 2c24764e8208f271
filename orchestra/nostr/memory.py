"""Buzz agent memory entries: blinded slugs and plaintext encoding (protocol.md §11.3-§11.4)."""

import hashlib
import hmac
import json
import re
from typing import Any

from orchestra.nostr.keys import Keys
from orchestra.nostr.nip44 import conversation_key

SLUG_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
_SLUG_DOMAIN = b"buzz-mem-slug-v1:"


class MemoryFormatError(ValueError):
    """A decrypted memory plaintext that is not a valid entry or tombstone."""


def self_key(keys: Keys) -> bytes:
    return conversation_key(keys.secret, keys.pubkey)


def blinded_slug(keys: Keys, slug: str) -> str:
    return hmac.new(self_key(keys), _SLUG_DOMAIN + slug.encode("utf-8"), hashlib.sha256).hexdigest()


def is_valid_slug(slug: str) -> bool:
    return SLUG_RE.fullmatch(slug) is not None


def _compact(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encode_entry(slug: str, value: str) -> str:
    return _compact({"v": 1, "slug": slug, "value": value})


def encode_tombstone(slug: str) -> str:
    return _compact({"v": 1, "slug": slug, "deleted": True})


def decode_plaintext(text: str) -> dict[str, Any]:
    """Parse an entry (`slug`, `value`) or tombstone (`slug`, `deleted: true`)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise MemoryFormatError("memory plaintext is not JSON") from None
    if not isinstance(data, dict) or data.get("v") != 1 or not isinstance(data.get("slug"), str):
        raise MemoryFormatError("memory plaintext lacks v=1 and a slug")
    if data.get("deleted") is True:
        return data
    if not isinstance(data.get("value"), str):
        raise MemoryFormatError("memory entry lacks a string value")
    return data
