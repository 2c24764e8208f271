"""A trial's errors as orchestrator.md §12 names them: `TrialFailure`s carry their type name;
anything else is an `InternalError`."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from orchestra.errors import TrialFailure
from orchestra.jsonio import utc_timestamp

CANCELLED = "Cancelled"
INTERNAL = "InternalError"


class TrialError(TrialFailure):
    """A trial failure classified where it happened; `exception_type` is a name of §12."""

    def __init__(self, exception_type: str, message: str) -> None:
        super().__init__(message)
        self.exception_type = exception_type


@contextmanager
def classified(exception_type: str) -> Iterator[None]:
    """Anything raised inside becomes a `TrialError` of this type; a `TrialFailure` is
    already classified and passes."""
    try:
        yield
    except TrialFailure:
        raise
    except Exception as error:
        raise TrialError(exception_type, f"{type(error).__name__}: {error}") from error


def exception_info(error: BaseException, phase: str) -> dict[str, str]:
    if isinstance(error, TrialFailure):
        kind, message = error.exception_type, str(error)
    else:
        kind, message = INTERNAL, f"{type(error).__name__}: {error}"
    return {
        "exception_type": kind,
        "exception_message": message,
        "exception_traceback": "".join(traceback.format_exception(error)),
        "occurred_at": utc_timestamp(),
        "phase": phase,
    }


def uncancel() -> None:
    """Keep cleaning up after a cancellation was caught (so later awaits are not cancelled)."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
