"""NIP-01 filters: validation (protocol.md §5.1) and matching (§5.2).

The relay's SQL translation must agree with `Filter.matches` exactly; tests check both against
each other.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from orchestra.nostr.event import MAX_SAFE_INTEGER, Event
from orchestra.nostr.hexutil import is_hex64
from orchestra.nostr.tags import has_value

MAX_FILTER_VALUES = 1000
DEFAULT_MAX_LIMIT = 500
_HEX_TAG_LETTERS = frozenset("epP")


class FilterError(ValueError):
    """A filter the relay refuses; `str()` is the exact `CLOSED` message."""


@dataclass(frozen=True)
class Filter:
    ids: frozenset[str] | None = None
    authors: frozenset[str] | None = None
    kinds: frozenset[int] | None = None
    tags: dict[str, frozenset[str]] = field(default_factory=dict)
    since: int | None = None
    until: int | None = None
    limit: int = DEFAULT_MAX_LIMIT

    def matches(self, event: Event) -> bool:
        if self.ids is not None and event.id not in self.ids:
            return False
        if self.authors is not None and event.pubkey not in self.authors:
            return False
        if self.kinds is not None and event.kind not in self.kinds:
            return False
        if self.since is not None and event.created_at < self.since:
            return False
        if self.until is not None and event.created_at > self.until:
            return False
        return all(has_value(event.tags, letter, values) for letter, values in self.tags.items())

    def matches_nothing(self) -> bool:
        """True when an empty list or an empty time range makes any match impossible."""
        empty_list = any(
            values is not None and not values for values in (self.ids, self.authors, self.kinds)
        ) or any(not values for values in self.tags.values())
        empty_range = self.since is not None and self.until is not None and self.since > self.until
        return empty_list or empty_range

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.ids is not None:
            out["ids"] = sorted(self.ids)
        if self.authors is not None:
            out["authors"] = sorted(self.authors)
        if self.kinds is not None:
            out["kinds"] = sorted(self.kinds)
        for letter, values in sorted(self.tags.items()):
            out[f"#{letter}"] = sorted(values)
        if self.since is not None:
            out["since"] = self.since
        if self.until is not None:
            out["until"] = self.until
        out["limit"] = self.limit
        return out


def matches_any(filters: Iterable[Filter], event: Event) -> bool:
    return any(f.matches(event) for f in filters)


def _is_nonnegative_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE_INTEGER


def _is_valid_unicode(text: str) -> bool:
    """False for strings with lone surrogates (from `\\ud800` escapes), which no event can
    contain and no database can store."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _value_list(name: str, value: object, max_values: int) -> list[Any]:
    if not isinstance(value, list):
        raise FilterError(f"invalid: {name} must be an array")
    if len(value) > max_values:
        raise FilterError(f"invalid: too many values in {name} (max {max_values})")
    return value


def _hex_set(name: str, value: object, max_values: int) -> frozenset[str]:
    values = _value_list(name, value, max_values)
    if not all(is_hex64(v) for v in values):
        raise FilterError(f"invalid: {name} must be an array of 64 lowercase hex strings")
    return frozenset(values)


def _optional_int(name: str, value: object) -> int:
    if not _is_nonnegative_int(value):
        raise FilterError(f"invalid: {name} must be a non-negative integer")
    return value


def parse_filter(
    obj: object, *, max_values: int = MAX_FILTER_VALUES, max_limit: int = DEFAULT_MAX_LIMIT
) -> Filter:
    if not isinstance(obj, dict):
        raise FilterError("invalid: filter must be an object")
    ids = authors = kinds = None
    since = until = None
    limit = max_limit
    tags: dict[str, frozenset[str]] = {}
    for key, value in obj.items():
        if key == "ids":
            ids = _hex_set("ids", value, max_values)
        elif key == "authors":
            authors = _hex_set("authors", value, max_values)
        elif key == "kinds":
            raw_kinds = _value_list("kinds", value, max_values)
            if not all(_is_nonnegative_int(k) and k <= 65535 for k in raw_kinds):
                raise FilterError("invalid: kinds must be an array of integers between 0 and 65535")
            kinds = frozenset(raw_kinds)
        elif key.startswith("#"):
            letter = key[1:]
            if len(letter) != 1 or not ("a" <= letter <= "z" or "A" <= letter <= "Z"):
                raise FilterError("invalid: tag filter keys must be # plus one letter")
            if letter in _HEX_TAG_LETTERS:
                tags[letter] = _hex_set(key, value, max_values)
            else:
                raw_values = _value_list(key, value, max_values)
                if not all(isinstance(v, str) for v in raw_values):
                    raise FilterError(f"invalid: {key} must be an array of strings")
                if not all(_is_valid_unicode(v) for v in raw_values):
                    raise FilterError("invalid: filter contains invalid unicode")
                tags[letter] = frozenset(raw_values)
        elif key == "since":
            since = _optional_int("since", value)
        elif key == "until":
            until = _optional_int("until", value)
        elif key == "limit":
            limit = min(_optional_int("limit", value), max_limit)
        # Other keys (e.g. NIP-50 `search`) are ignored, as protocol.md §5.1 says.
    return Filter(ids, authors, kinds, tags, since, until, limit)
