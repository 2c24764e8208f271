"""Waking a reader when one file may have grown: inotify on Linux, a short poll elsewhere.

The orchestrator follows every agent's event log for the whole trial (orchestrator.md §7.10).
Polling it every 50 ms costs the orchestrator CPU on every tick of every trial; inotify wakes
it only when the agent actually wrote. The directory is watched, not the file, so the watch
works before `buzz-acp` has created its log.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import struct
import sys
from pathlib import Path
from typing import Protocol

POLL_INTERVAL_SECONDS = 0.05
_IN_MODIFY = 0x00000002
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_Q_OVERFLOW = 0x00004000
_EVENT_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of name


class FileChanges(Protocol):
    async def wait(self) -> None:
        """Return once the file may have changed since the previous return."""

    def close(self) -> None: ...


class PollingChanges:
    """The portable fallback: every call to `wait` simply lets a poll interval pass."""

    async def wait(self) -> None:
        await asyncio.sleep(POLL_INTERVAL_SECONDS)

    def close(self) -> None:
        pass


class InotifyChanges:
    """inotify on the file's directory, filtered by the file's name."""

    def __init__(self, path: Path, libc: ctypes.CDLL) -> None:
        self._name = os.fsencode(path.name)
        self._changed = asyncio.Event()
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        watch = libc.inotify_add_watch(
            fd, os.fsencode(path.parent), _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO
        )
        if watch < 0:
            error = ctypes.get_errno()
            os.close(fd)
            raise OSError(error, f"inotify_add_watch failed on {path.parent}")
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._drain)

    def _drain(self) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        offset = 0
        while offset + _EVENT_HEADER.size <= len(data):
            _, mask, _, length = _EVENT_HEADER.unpack_from(data, offset)
            start = offset + _EVENT_HEADER.size
            name = data[start : start + length].rstrip(b"\0")
            offset = start + length
            if mask & _IN_Q_OVERFLOW or name == self._name:
                self._changed.set()

    async def wait(self) -> None:
        await self._changed.wait()
        self._changed.clear()

    def close(self) -> None:
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1


def _load_libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _load_libc()


def watch_file(path: Path) -> FileChanges:
    """inotify where available (and within the user's instance limit), else polling.

    Call from inside the running event loop; the directory is created when missing.
    """
    if _LIBC is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return InotifyChanges(path, _LIBC)
        except OSError:
            pass
    return PollingChanges()
