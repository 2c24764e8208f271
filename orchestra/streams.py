"""Standard streams that a reader going away cannot break (a pipe into `head`, a closed terminal).

A write to a pipe whose reader exited fails with EPIPE (`BrokenPipeError`), to a terminal that
hung up with EIO. Either way the reader is gone and the output is lost, but the program must go
on with what it was doing: a benchmark still finishes (or cancels) its trials and writes their
results, a `buzz` command that already published still exits 0. So the text is dropped, the
descriptor is pointed at /dev/null (the interpreter's last flush and child processes that inherit
it then write nowhere instead of failing), and callbacks registered for the moment run once.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO, cast

#: The errors that mean "nobody reads this any more": a closed pipe, a hung-up terminal.
READER_GONE_ERRNOS = frozenset({errno.EPIPE, errno.EIO, errno.ENXIO})


class GuardedStream:
    """A text stream whose writes never fail because the reader is gone; other errors raise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.reader_gone = False
        self._callbacks: list[Callable[[], None]] = []

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self.stream.write(text)
            except OSError as error:
                self._lost(error)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self.stream.flush()
            except OSError as error:
                self._lost(error)

    def isatty(self) -> bool:
        if self.reader_gone:
            return False
        try:
            return self.stream.isatty()
        except (OSError, ValueError):
            return False

    def when_reader_gone(self, callback: Callable[[], None]) -> None:
        """Run `callback` once when a write first finds the reader gone (now, if it is)."""
        if self.reader_gone:
            callback()
        else:
            self._callbacks.append(callback)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def _lost(self, error: OSError) -> None:
        if error.errno not in READER_GONE_ERRNOS:
            raise error
        self.reader_gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError):
            pass  # no descriptor of its own (a test's StringIO): dropping the text is enough
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


def guard(stream: TextIO) -> TextIO:
    """`stream` wrapped once (a guarded stream is returned as it is)."""
    return stream if isinstance(stream, GuardedStream) else cast(TextIO, GuardedStream(stream))


def _reopen_if_closed(fd: int) -> TextIO | None:
    """/dev/null on a standard descriptor the program was started without (`>&-`): otherwise
    the next file opened takes its number and child processes would write into that file."""
    try:
        os.fstat(fd)
        return None
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != fd:
            os.dup2(devnull, fd)
            os.close(devnull)
        return open(fd, "w", encoding="utf-8", closefd=False)


def guard_standard_streams() -> None:
    """Wrap `sys.stdout` and `sys.stderr`; console scripts call this first."""
    sys.stdout = guard(_reopen_if_closed(1) or sys.stdout)
    sys.stderr = guard(_reopen_if_closed(2) or sys.stderr)


def when_stdout_gone(callback: Callable[[], None]) -> None:
    """Run `callback` once if the reader of a guarded `sys.stdout` goes away."""
    stdout: object = sys.stdout
    if isinstance(stdout, GuardedStream):
        stdout.when_reader_gone(callback)
