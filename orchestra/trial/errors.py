"""A trial's errors as orchestrator.md §12 names them: `TrialFailure`s carry their type name;
anything else is an `InternalError`."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from orchestra.documents.enums import ErrorType, Phase
from orchestra.documents.trial import ExceptionInfo
from orchestra.errors import TrialFailure
from orchestra.jsonio import utc_timestamp


class TrialError(TrialFailure):
    """A trial failure classified where it happened; `exception_type` is a name of §12."""

    def __init__(self, exception_type: ErrorType, message: str) -> None:
        super().__init__(message)
        self.exception_type = exception_type


@contextmanager
def classified(exception_type: ErrorType) -> Iterator[None]:
    """Anything raised inside becomes a `TrialError` of this type; a `TrialFailure` is
    already classified and passes."""
    try:
        yield
    except TrialFailure:
        raise
    except Exception as error:
        raise TrialError(exception_type, f"{type(error).__name__}: {error}") from error


def exception_info(error: BaseException, phase: Phase) -> ExceptionInfo:
    """The result.json record of `error`, raised in `phase`."""
    if isinstance(error, TrialFailure):
        kind, message = ErrorType(error.exception_type), str(error)
    else:
        kind, message = ErrorType.INTERNAL_ERROR, f"{type(error).__name__}: {error}"
    return ExceptionInfo(
        exception_type=kind,
        exception_message=message,
        exception_traceback="".join(traceback.format_exception(error)),
        occurred_at=utc_timestamp(),
        phase=phase,
    )


def uncancel() -> None:
    """Keep cleaning up after a cancellation was caught (so later awaits are not cancelled)."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
