"""The fork server's client: what `buzz-agent`, `buzz-dev-mcp` and `buzz` are inside a sandbox
whose tree has a fork server (orchestra/agents/forkserver/__init__.py).

The package never imports this file: `forkserver.launch.stub_script` puts a `#!` line before it
that runs the agents' interpreter with `-S -I`, and a call of `main` after it, so that it starts
in a few milliseconds with built-in modules only. It hands its argv, environment, working
directory, umask and standard descriptors (SCM_RIGHTS) to the server, which forks the program
pre-imported; it then holds the program's place among its parent's children: the signals it gets
are passed on, and it exits as the program did (the same code, or killed by the same signal).
Where the server cannot be reached or refuses, it execs the program in a fresh interpreter.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # `signal` would import enum: 3 ms more
import _socket
import os
import sys

TYPE_CHECKING = False  # `typing` costs milliseconds; type checkers know the name
if TYPE_CHECKING:
    from collections.abc import Iterator

MAGIC = b"buzz-fork/1"
RELAYED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")


def plain_exec(python: str, entry_point: str, argv: list[str]) -> None:
    """The program in a fresh interpreter, as its console script runs it."""
    module, _, function = entry_point.partition(":")
    code = (
        "import sys; sys.argv[:2] = sys.argv[1:2]; "
        f"from {module} import {function}; sys.exit({function}())"
    )
    os.execv(python, [python, "-c", code, *argv])


def request(
    program: str, argv: list[str], cwd: bytes, umask: int, env: dict[bytes, bytes], target: int
) -> bytes:
    """The request `server.parse_request` reads (the launcher's request for a tree's first
    program is made here too)."""
    fields = [MAGIC, program.encode(), cwd, b"%d" % umask, b"%d" % target]
    fields += [b"%d" % len(argv), *(os.fsencode(arg) for arg in argv)]
    fields += [b"%s=%s" % item for item in env.items()]
    payload = b"\0".join(fields)
    return len(payload).to_bytes(4, "big") + payload


def current_umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def reply_lines(connection: _socket.socket) -> Iterator[list[str]]:
    pending = b""
    while True:
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode(errors="replace").split(" ", 1)
        chunk = connection.recv(4096)
        if not chunk:
            return
        pending += chunk


class Relay:
    """Passes the signals this process gets to the program; those that come before the
    program's pid is known are passed on once it is."""

    def __init__(self) -> None:
        self.pid = 0
        self.pending: list[int] = []
        for name in RELAYED:
            _signal.signal(getattr(_signal, name), self.handle)

    def handle(self, signum: int, _frame: object) -> None:
        if not self.pid:
            self.pending.append(signum)
            return
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def to(self, pid: int) -> None:
        self.pid = pid
        for signum in self.pending:
            self.handle(signum, None)

    def undo(self) -> None:
        """Default dispositions again; a signal that came meanwhile ends this process now."""
        for name in RELAYED:
            _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
        for signum in self.pending:
            os.kill(os.getpid(), signum)


def detach_standard_streams() -> None:
    """Hold no end of the program's pipes: their readers see EOF when the program closes them."""
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def end_as(kind: str, value: str) -> None:
    if kind == "signal":
        signum = int(value)
        _signal.signal(signum, _signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(int(value))


def main(socket_path: str, python: str, entry_points: dict[str, str]) -> None:
    program = os.path.basename(sys.argv[0])
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
    reply: Iterator[list[str]] = iter(())
    answer = ["error", "no answer"]
    relay = Relay()
    try:
        connection.connect(socket_path)
        connection.sendmsg(
            [request(program, sys.argv, os.getcwdb(), current_umask(), dict(os.environb), 0)],
            [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)],
        )
        reply = reply_lines(connection)
        answer = next(reply, answer)
    except OSError as error:
        answer = ["error", str(error)]
    if answer[0] != "pid" or len(answer) != 2:
        connection.close()
        relay.undo()
        plain_exec(python, entry_points[program], sys.argv)
    relay.to(int(answer[1]))
    detach_standard_streams()
    for kind, *value in reply:
        if kind in ("exit", "signal") and value:
            end_as(kind, value[0])
    os._exit(1)  # the server went away before the program ended: its namespace is ending
