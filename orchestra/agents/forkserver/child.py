"""A process forked for a request becoming the program, as an exec of its console script would
have made it: its own argv, environment, working directory, umask and standard streams, a
session of its own, default signal dispositions, no descriptor of the server's, the sandbox's
privileges (none), and the program's exit status."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import io
import os
import signal
import socket
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from orchestra.agents.forkserver.namespaces import drop_privileges
from orchestra.agents.forkserver.programs import entry_point

PR_SET_NAME = 15
#: Signals the server handles; a program starts with the default disposition of each.
SERVER_SIGNALS = (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass(frozen=True)
class Start:
    """What a program is started with. `entry`: its `module:function`; `fds`: the descriptors
    that become 0, 1 and 2; `target`: the sandbox to start it in (see `server.parse_request`)."""

    program: str
    entry: str
    argv: Sequence[str]
    env: Mapping[bytes, bytes]
    cwd: bytes
    umask: int
    fds: Sequence[int]
    target: int = 0


def become(start: Start, requester: socket.socket, *, sandboxed: bool) -> NoReturn:
    """Run `start.program` in this freshly forked process (in the sandbox if `sandboxed`),
    after telling `requester` its pid; never returns."""
    code = 1
    try:
        if sandboxed:
            drop_privileges()
        requester.sendall(f"pid {os.getpid()}\n".encode())
        _take_over(start)
        code = _run(start.entry)
    except BaseException:  # a bad start: the program never ran
        with contextlib.suppress(Exception):
            traceback.print_exc()
    os._exit(code)


def _take_over(start: Start) -> None:
    for signum in SERVER_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    for target, fd in enumerate(start.fds):
        os.dup2(fd, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the server's socket and connections
    os.setsid()
    os.chdir(start.cwd)
    os.umask(start.umask)
    os.environb.clear()
    os.environb.update(start.env)
    sys.argv = list(start.argv)
    _standard_streams()
    name_process(start.program)


def _standard_streams() -> None:
    """New `sys.std*` on descriptors 0-2, buffered as the interpreter's start-up makes them."""
    write_through = bool(os.environ.get("PYTHONUNBUFFERED"))
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        old = getattr(sys, f"__{name}__")
        raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(
            buffered,
            encoding=old.encoding,
            errors=old.errors,
            line_buffering=fd == 2 or raw.isatty(),
            write_through=write_through and fd != 0,
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def name_process(program: str) -> None:
    """`ps` and /proc/<pid>/comm show `program` (15 bytes of it), not the interpreter."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(PR_SET_NAME, program.encode()[:15], 0, 0, 0)


def _run(entry: str) -> int:
    """The program's entry point with `sys.exit(main())` semantics, then the exit functions."""
    try:
        code = _exit_code(entry_point(entry)())
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    with contextlib.suppress(Exception):
        print(value, file=sys.stderr)
    return 1
