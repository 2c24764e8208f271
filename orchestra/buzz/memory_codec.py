"""Encryption and blinding of one identity's memory entries (protocol.md §11.2-§11.4)."""

from typing import Any

from orchestra.nostr import memory, nip44, tags
from orchestra.nostr.keys import Keys
from orchestra.nostr.kinds import Kind


class MemoryCodec:
    """Self-encryption and blinded `d` tags for one identity (the conversation key is cached)."""

    kind = Kind.MEMORY

    def __init__(self, keys: Keys) -> None:
        self._keys = keys
        self._self_key = memory.self_key(keys)

    def d_tag(self, slug: str) -> str:
        return memory.blinded_slug(self._keys, slug)

    def seal_entry(self, slug: str, value: str) -> str:
        return nip44.encrypt(memory.encode_entry(slug, value), self._self_key)

    def seal_tombstone(self, slug: str) -> str:
        return nip44.encrypt(memory.encode_tombstone(slug), self._self_key)

    @staticmethod
    def is_valid_slug(slug: str) -> bool:
        return memory.is_valid_slug(slug)

    @staticmethod
    def plaintext_bytes(slug: str, value: str) -> int:
        return len(memory.encode_entry(slug, value).encode("utf-8"))

    def open(self, event: dict[str, Any]) -> tuple[str, str | None] | None:
        """`(slug, value or None for a tombstone)`; None when corrupt or not blinded by us."""
        try:
            entry = memory.decode_plaintext(nip44.decrypt(event["content"], self._self_key))
        except (nip44.Nip44Error, memory.MemoryFormatError):
            return None
        slug = entry["slug"]
        if tags.first_value(tags.of_event(event), "d") != self.d_tag(slug):
            return None
        return slug, None if entry.get("deleted") is True else entry["value"]
