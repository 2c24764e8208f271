"""Ownership files: who runs a stack or a job, and whether that process is still alive.

An `OwnerLock` is an exclusive advisory lock (`flock`) on a small file that names its holder's
pid. The kernel releases the lock when the holder dies, by any signal, SIGKILL included, so a
file that names a pid but is not locked was left by a holder that died without cleaning up:
whatever it ran is a leftover to reap. The descriptor is close-on-exec, so no child inherits
the lock and outlives its holder holding it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


class OwnerLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        #: the pid a holder that died left in the file (read by `acquire`); None: a clean file
        self.previous: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """Take the lock without waiting; False when a live process holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        self.previous = _pid_in(os.pread(fd, 64, 0))
        return True

    def claim(self) -> None:
        """Name this process as the holder (the lock must be held)."""
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Clear the file and drop the lock: what it guarded was cleaned up."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
        self.let_go()

    def let_go(self) -> None:
        """Drop the lock and leave the file as it is (a dead holder's pid stays for whoever
        cleans up after it)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the flock

    def holder(self) -> int | None:
        """The pid the file names (the live holder when `acquire` failed)."""
        try:
            return _pid_in(self.path.read_bytes())
        except OSError:
            return None


def _pid_in(content: bytes) -> int | None:
    try:
        return int(content.decode().strip())
    except ValueError:
        return None
