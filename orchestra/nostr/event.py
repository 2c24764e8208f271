"""Nostr events: canonical serialisation, id, signing, validation (protocol.md §2)."""

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard

import orjson

from orchestra.nostr import tags as tag_list
from orchestra.nostr.hexutil import is_hex64, is_hex128
from orchestra.nostr.keys import Keys, verify_signature
from orchestra.nostr.kinds import Kind

MAX_EVENT_BYTES = 131_072
MAX_TAGS = 2000
MAX_TAG_ELEMENT_BYTES = 8192
MAX_CONTENT_CHARS = 100_000
MAX_SAFE_INTEGER = 2**53 - 1

KindClass = Literal["regular", "replaceable", "ephemeral", "addressable"]
Tags = tuple[tuple[str, ...], ...]


class EventError(ValueError):
    """An event that the protocol rejects; `str()` is the exact relay message (`invalid: …`)."""


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        raise EventError("invalid: event contains invalid unicode") from None


def serialize_for_id(
    pubkey: str, created_at: int, kind: int, tags: Sequence[Sequence[str]], content: str
) -> bytes:
    """The NIP-01 commitment array `[0,pubkey,created_at,kind,tags,content]` as UTF-8 bytes."""
    return _dumps([0, pubkey, created_at, kind, tags, content])


def compute_id(
    pubkey: str, created_at: int, kind: int, tags: Sequence[Sequence[str]], content: str
) -> str:
    return hashlib.sha256(serialize_for_id(pubkey, created_at, kind, tags, content)).hexdigest()


@dataclass(frozen=True)
class Event:
    id: str
    pubkey: str
    created_at: int
    kind: int
    tags: Tags
    content: str
    sig: str
    raw: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.raw:
            object.__setattr__(self, "raw", _dumps(self.to_dict()).decode())

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pubkey": self.pubkey,
            "created_at": self.created_at,
            "kind": self.kind,
            "tags": [list(tag) for tag in self.tags],
            "content": self.content,
            "sig": self.sig,
        }

    def tag_values(self, name: str) -> list[str]:
        """First values of every tag called `name`, in tag order."""
        return tag_list.values(self.tags, name)

    def first_tag_value(self, name: str) -> str | None:
        return tag_list.first_value(self.tags, name)

    def has_valid_id(self) -> bool:
        return (
            compute_id(self.pubkey, self.created_at, self.kind, self.tags, self.content) == self.id
        )

    def has_valid_signature(self) -> bool:
        return verify_signature(self.pubkey, bytes.fromhex(self.id), bytes.fromhex(self.sig))


def sign_event(
    keys: Keys,
    kind: int,
    content: str,
    tags: Iterable[Sequence[str]] = (),
    created_at: int | None = None,
    aux: bytes | None = None,
) -> Event:
    frozen_tags: Tags = tuple(tuple(tag) for tag in tags)
    stamp = int(time.time()) if created_at is None else created_at
    event_id = compute_id(keys.pubkey, stamp, kind, frozen_tags, content)
    sig = keys.sign(bytes.fromhex(event_id), aux).hex()
    return Event(event_id, keys.pubkey, stamp, kind, frozen_tags, content, sig)


def _is_json_integer(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_tags(tags: object) -> Tags:
    if not isinstance(tags, list) or not all(
        isinstance(tag, list) and tag and all(isinstance(item, str) for item in tag) for tag in tags
    ):
        raise EventError("invalid: tags must be an array of arrays of strings")
    if len(tags) > MAX_TAGS:
        raise EventError(f"invalid: too many tags (max {MAX_TAGS})")
    for tag in tags:
        for item in tag:
            # UTF-8 length is at most 4 bytes per character: skip the encode for short items.
            if len(item) * 4 > MAX_TAG_ELEMENT_BYTES and _utf8_len(item) > MAX_TAG_ELEMENT_BYTES:
                raise EventError(
                    f"invalid: tag element too long (max {MAX_TAG_ELEMENT_BYTES} bytes)"
                )
    return tuple(tuple(tag) for tag in tags)


def _utf8_len(text: str) -> int:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise EventError("invalid: event contains invalid unicode") from None


def parse_event(
    obj: object, *, verify: bool = True, max_event_bytes: int = MAX_EVENT_BYTES
) -> Event:
    """Validate a decoded JSON event (protocol.md §2.1) and build an `Event`.

    With `verify=False` the id and signature are not checked, so a caller can run its own
    pipeline steps in between and call `check_id_and_signature` later.
    """
    if not isinstance(obj, dict):
        raise EventError("invalid: EVENT needs exactly one event object")
    event_id, pubkey, sig = obj.get("id"), obj.get("pubkey"), obj.get("sig")
    created_at, kind, content = obj.get("created_at"), obj.get("kind"), obj.get("content")
    if not is_hex64(event_id):
        raise EventError("invalid: id must be 64 lowercase hex characters")
    if not is_hex64(pubkey):
        raise EventError("invalid: pubkey must be 64 lowercase hex characters")
    if not _is_json_integer(created_at) or not 0 <= created_at <= MAX_SAFE_INTEGER:
        raise EventError("invalid: created_at must be an integer")
    if not _is_json_integer(kind) or not 0 <= kind <= 65535:
        raise EventError("invalid: kind must be an integer between 0 and 65535")
    tags = _check_tags(obj.get("tags"))
    if not isinstance(content, str):
        raise EventError("invalid: content must be a string")
    if len(content) > MAX_CONTENT_CHARS:
        raise EventError(f"invalid: content too long (max {MAX_CONTENT_CHARS} characters)")
    if not is_hex128(sig):
        raise EventError("invalid: sig must be 128 lowercase hex characters")
    event = Event(event_id, pubkey, created_at, kind, tags, content, sig)
    size = len(event.raw.encode("utf-8"))
    if size > max_event_bytes:
        raise EventError(f"invalid: event too large ({size} bytes > {max_event_bytes})")
    if verify:
        check_id_and_signature(event)
    return event


def check_id_and_signature(event: Event) -> None:
    if not event.has_valid_id():
        raise EventError("invalid: event id does not match the event content")
    if not event.has_valid_signature():
        raise EventError("invalid: bad signature")


def kind_class(kind: int) -> KindClass:
    if kind in (Kind.PROFILE, Kind.FOLLOW_LIST) or 10000 <= kind < 20000:
        return "replaceable"
    if 20000 <= kind < 30000:
        return "ephemeral"
    if 30000 <= kind < 40000:
        return "addressable"
    return "regular"


def d_tag(event: Event) -> str:
    """The addressable-event key: first value of the first `d` tag, or `""`."""
    return tag_list.d_value(event.tags)
