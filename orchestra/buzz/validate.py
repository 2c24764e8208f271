"""Local argument validation shared by every operation (buzz-cli.md §1 argument forms)."""

import re

from orchestra.buzz.errors import BuzzError, user_error
from orchestra.nostr.keys import parse_pubkey

_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX64_RE = re.compile(r"[0-9a-f]{64}")


def channel_id(value: str) -> str:
    normalized = value.strip().lower()
    if not _UUID_RE.fullmatch(normalized):
        raise user_error(f"invalid channel {value!r}: expected a UUID")
    return normalized


def event_id(value: str, what: str = "event id") -> str:
    normalized = value.strip().lower()
    if not _HEX64_RE.fullmatch(normalized):
        raise user_error(f"invalid {what} {value!r}: expected 64 hex characters")
    return normalized


def pubkey(value: str, what: str = "pubkey") -> str:
    try:
        return parse_pubkey(value)
    except ValueError as exc:
        raise user_error(f"invalid {what}: {exc}") from None


def integer_in_range(name: str, value: int, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _range_error(name, low, high)
    if high is not None and value > high:
        raise _range_error(name, low, high)
    return value


def _range_error(name: str, low: int, high: int | None) -> BuzzError:
    if high is None:
        return user_error(f"{name} must be an integer >= {low}")
    return user_error(f"{name} must be an integer between {low} and {high}")


def choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        options = ", ".join(allowed[:-1]) + " or " + allowed[-1]
        raise user_error(f"{name} must be {options}")
    return value
