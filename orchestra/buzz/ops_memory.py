"""`mem ls|get|hash|set|rm`: encrypted, author-only agent memory (buzz-cli.md §8, protocol.md §11)."""

import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestra.buzz import validate
from orchestra.buzz.errors import BuzzError, not_found, user_error
from orchestra.buzz.lookups import Lookups
from orchestra.buzz.ops_messages import ok_message
from orchestra.buzz.rows import EventDict

if TYPE_CHECKING:
    from orchestra.buzz.memory_codec import MemoryCodec

MAX_PLAINTEXT_BYTES = 65_535


def value_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class MemoryHead:
    """The stored version of one slug: `value` is None for a tombstone."""

    event: EventDict
    value: str | None


def _conflict(slug: str, current_hash: str | None) -> BuzzError:
    return BuzzError(
        "conflict",
        f"memory '{slug}' changed concurrently (current hash {current_hash or 'none'})",
    )


class MemoryOps(Lookups):
    _memory_codec: "MemoryCodec | None" = None

    def _codec(self) -> "MemoryCodec":
        # Imported on first use: the crypto stack costs start-up time for every other command.
        codec = self._memory_codec
        if codec is None:
            from orchestra.buzz.memory_codec import MemoryCodec

            codec = self._memory_codec = MemoryCodec(self._keys)
        return codec

    def _slug(self, slug: str) -> str:
        if not self._codec().is_valid_slug(slug):
            raise user_error(
                f"invalid slug {slug!r}: must match ^[A-Za-z0-9][A-Za-z0-9._/-]{{0,127}}$"
            )
        return slug

    async def _head(self, slug: str) -> MemoryHead | None:
        events = await self.query_one(
            {
                "kinds": [self._codec().kind],
                "authors": [self.pubkey],
                "#d": [self._codec().d_tag(slug)],
            }
        )
        for event in sorted(events, key=lambda e: (e["created_at"], e["id"]), reverse=True):
            decoded = self._codec().open(event)
            if decoded is not None and decoded[0] == slug:
                return MemoryHead(event, decoded[1])
        return None

    async def _live_entry(self, slug: str) -> MemoryHead:
        head = await self._head(self._slug(slug))
        if head is None or head.value is None:
            raise not_found(f"memory '{slug}' not found")
        return head

    async def mem_ls(self) -> list[dict[str, Any]]:
        events, _ = await self.paged_query(
            {"kinds": [self._codec().kind], "authors": [self.pubkey]}
        )
        rows = {}
        for event in events:
            decoded = self._codec().open(event)
            if decoded is None:
                continue
            slug, value = decoded
            if value is None:
                continue
            rows[slug] = {
                "slug": slug,
                "updated_at": event["created_at"],
                "bytes": len(value.encode("utf-8")),
                "hash": value_hash(value),
            }
        return [rows[slug] for slug in sorted(rows)]

    async def mem_get(self, slug: str) -> dict[str, Any]:
        head = await self._live_entry(slug)
        assert head.value is not None
        return {
            "slug": slug,
            "value": head.value,
            "hash": value_hash(head.value),
            "updated_at": head.event["created_at"],
            "event_id": head.event["id"],
        }

    async def mem_hash(self, slug: str) -> dict[str, Any]:
        head = await self._live_entry(slug)
        assert head.value is not None
        return {"slug": slug, "hash": value_hash(head.value)}

    async def mem_set(
        self,
        slug: str,
        value: str,
        allow_empty: bool = False,
        base_hash: str | None = None,
    ) -> dict[str, Any]:
        self._slug(slug)
        if value == "" and not allow_empty:
            raise user_error("memory value is empty")
        if self._codec().plaintext_bytes(slug, value) > MAX_PLAINTEXT_BYTES:
            raise user_error("memory value too large")
        expected = None
        if base_hash is not None and base_hash != "none":
            expected = validate.event_id(base_hash, "--base-hash")
        head = await self._head(slug)
        current_hash = value_hash(head.value) if head and head.value is not None else None
        if base_hash == "none" and current_hash is not None:
            raise _conflict(slug, current_hash)
        if expected is not None and current_hash != expected:
            raise _conflict(slug, current_hash)
        result = await self._publish_version(slug, self._codec().seal_entry(slug, value), head)
        return {
            "slug": slug,
            "hash": value_hash(value),
            "updated_at": result["event"]["created_at"],
            **{key: result[key] for key in ("event_id", "accepted")},
            "message": ok_message(result["message"]),
        }

    async def mem_rm(self, slug: str) -> dict[str, Any]:
        head = await self._live_entry(slug)
        result = await self._publish_version(slug, self._codec().seal_tombstone(slug), head)
        return {
            "slug": slug,
            "removed": True,
            "event_id": result["event_id"],
            "accepted": True,
            "message": ok_message(result["message"]),
        }

    async def _publish_version(
        self, slug: str, sealed: str, head: MemoryHead | None
    ) -> dict[str, Any]:
        created_at = int(time.time())
        if head is not None:
            created_at = max(created_at, head.event["created_at"] + 1)
        tags = [["d", self._codec().d_tag(slug)]]
        try:
            return await self.publish(self._codec().kind, sealed, tags, created_at=created_at)
        except BuzzError as exc:
            if not exc.message.startswith("duplicate: a newer version"):
                raise
            newer = await self._head(slug)
            current = value_hash(newer.value) if newer and newer.value is not None else None
            raise _conflict(slug, current) from None
