"""Outcomes of relay operations: the `OK`/`CLOSED` message a client receives."""

from dataclasses import dataclass

INTERNAL_ERROR = "error: internal error; try again"
DUPLICATE_EVENT = "duplicate: already have this event"
NEWER_VERSION_EXISTS = "duplicate: a newer version of this event exists"
NOT_A_MEMBER = "restricted: not a channel member"
AUTH_FIRST = "auth-required: authenticate first"


class Rejected(Exception):
    """A refused request; `message` is the exact `<prefix>: <text>` sent to the client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class WriteResult:
    accepted: bool
    message: str = ""


ACCEPTED = WriteResult(True, "")
DUPLICATE = WriteResult(True, DUPLICATE_EVENT)
FAILED = WriteResult(False, INTERNAL_ERROR)
