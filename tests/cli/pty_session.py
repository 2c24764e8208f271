"""Running a console script in a pseudo-terminal, as a person does, and pressing Ctrl-C.

The child gets the pty as its controlling terminal, so the `\\x03` written to the master is
turned into SIGINT for its foreground process group by the line discipline, exactly as a key
press is. The exit is awaited on a pidfd; the output is read until the child is gone.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
CHECK_SECONDS = 0.05  # how often `interrupt_when` is asked while output is quiet


@dataclass(frozen=True)
class PtyRun:
    exit_code: int
    output: str  # ANSI sequences and carriage returns removed

    @property
    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.output.splitlines() if line.strip()]


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: every slave end is closed
        return b""


def run_in_pty(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    interrupt_when: Callable[[], bool] | None = None,
    columns: int = 120,
    timeout: float = 300.0,
) -> PtyRun:
    """Run `argv` on a `columns`-wide terminal; press Ctrl-C once `interrupt_when()` holds."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once, nothing else
        try:
            os.chdir(cwd)
            os.execve(argv[0], list(argv), dict(env))
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    pidfd = os.pidfd_open(pid)
    output = bytearray()
    pending = interrupt_when is not None
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                os.kill(pid, signal.SIGKILL)
                raise TimeoutError(f"{argv[0]} still running after {timeout} s:\n{output!r}")
            wait = min(remaining, CHECK_SECONDS) if pending else remaining
            ready, _, _ = select.select([fd, pidfd], [], [], wait)
            if fd in ready:
                output += _read(fd)
            if pidfd in ready:
                break
            if pending and interrupt_when is not None and interrupt_when():
                os.write(fd, b"\x03")
                pending = False
        while select.select([fd], [], [], 0)[0] and (chunk := _read(fd)):
            output += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(pidfd)
        os.close(fd)
    text = ANSI.sub("", output.decode("utf-8", errors="replace"))
    return PtyRun(os.waitstatus_to_exitcode(status), text)
