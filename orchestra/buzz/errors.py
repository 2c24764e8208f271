"""Error categories, exit codes and relay-message mapping (buzz-cli.md §3)."""

import enum
from typing import Any, Final

from orchestra.errors import OrchestraError

EXIT_CODES = {
    "user_error": 1,
    "not_found": 1,
    "network_error": 2,
    "relay_error": 2,
    "auth_error": 3,
    "key_error": 3,
    "error": 4,
    "conflict": 5,
}
_RETRYABLE_BY_DEFAULT = frozenset({"network_error"})


class BuzzError(OrchestraError):
    """A failed operation; `to_json()` is exactly what the CLI prints on stderr."""

    def __init__(
        self,
        error: str,
        message: str,
        *,
        retryable: bool | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        if error not in EXIT_CODES:
            raise ValueError(f"unknown error category {error!r}")
        self.error = error
        self.message = message
        self.retryable = error in _RETRYABLE_BY_DEFAULT if retryable is None else retryable
        self.details = details
        self.exit_code = EXIT_CODES[error]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "error": self.error,
            "message": self.message,
            "retryable": self.retryable,
        }
        if self.details is not None:
            out["details"] = self.details
        return out

    def __repr__(self) -> str:
        return f"BuzzError({self.error!r}, {self.message!r}, retryable={self.retryable})"


def user_error(message: str, details: dict[str, Any] | None = None) -> BuzzError:
    return BuzzError("user_error", message, details=details)


def not_found(message: str) -> BuzzError:
    return BuzzError("not_found", message)


def network_error(message: str) -> BuzzError:
    return BuzzError("network_error", message, retryable=True)


def from_relay_message(message: str) -> BuzzError:
    """Map a refusal (`OK false` / `CLOSED`) to its category; the message stays verbatim."""
    prefix = message.split(":", 1)[0].strip() if ":" in message else ""
    if prefix in ("invalid", "duplicate"):
        return BuzzError("user_error", message)
    if prefix in ("auth-required", "restricted", "blocked"):
        return BuzzError("auth_error", message)
    if prefix in ("error", "rate-limited"):
        return BuzzError("relay_error", message, retryable=True)
    return BuzzError("relay_error", message or "relay refused without a message", retryable=False)


class EndOfStoredEvents(enum.Enum):
    """The end of stored events in a subscription: a one-member enum, so `item is EOSE` narrows."""

    EOSE = "EOSE"

    def __repr__(self) -> str:
        return "EOSE"


EOSE: Final = EndOfStoredEvents.EOSE
