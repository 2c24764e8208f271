"""A program the fork server serves, started from its parent's process (docs/decisions.md D29).

Inside a sandbox whose tree has a fork server, the console scripts of buzz-agent, buzz-dev-mcp and
`buzz` are the server's client (`stub.py`, bound over them and at `FORK_CLIENT`). A client is a
whole interpreter that, once the server has forked the program, only relays signals and waits for
the exit report: 3.4 MiB of PSS for each long-lived one. So buzz-acp (its agents) and buzz-agent
(its MCP servers) make the client's request themselves (`start_served`): the same request
(`stub.request`), the child's stdin and stdout pipes and the parent's stderr as SCM_RIGHTS; the
server answers `pid N` (the program's pid in the sandbox, where the parent is too), later
`exit N` or `signal N`, and SIGKILLs the program's process group when the parent's connection
closes first (the parent died). `ForkedProcess` is what the parent then holds, with the part
of `asyncio.subprocess.Process` its code uses.

A command is served exactly when its parent would run the client: it resolves (on the child's
PATH) to a file that is `FORK_CLIENT` (a bind of the same file) and is named after a program of
the server's. Anything else, or a server that cannot be reached or refuses, gives `None`: the
parent starts the command as a plain subprocess, as before (which, for a client, is the client
trying the server once more and then exec'ing the program).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from orchestra.agents.forkserver.programs import CLIENT_PROGRAMS
from orchestra.agents.forkserver.stub import current_umask, request
from orchestra.paths import FORK_CLIENT, FORK_SERVER_SOCKET

#: how long the server may take to fork the program (its request process is forked at once)
START_SECONDS = 60.0
STREAM_LIMIT = 64 * 1024  # asyncio's default line limit


def served(
    command: str,
    env: Mapping[str, str],
    *,
    client: Path = Path(FORK_CLIENT),
    programs: Collection[str] = CLIENT_PROGRAMS,
) -> str | None:
    """The path `command` runs from if it is the fork server's client for one of `programs`
    (as `execvp` finds it on `env`'s PATH), else None."""
    path = shutil.which(command, path=env.get("PATH", os.defpath))
    if path is None or os.path.basename(path) not in programs:
        return None
    try:
        return path if os.path.samefile(path, client) else None
    except OSError:
        return None


async def send_request(sock: socket.socket, payload: bytes, fds: Sequence[int]) -> None:
    """`payload` on the connected non-blocking `sock`, `fds` (stdin, stdout, stderr) with its
    first bytes."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            sent = socket.send_fds(sock, [payload], list(fds))
            break
        except BlockingIOError:
            writable = loop.create_future()
            loop.add_writer(sock, writable.set_result, None)
            try:
                await writable
            finally:
                loop.remove_writer(sock)
    await loop.sock_sendall(sock, payload[sent:])


class ForkedProcess:
    """A program the fork server forked for this process: `asyncio.subprocess.Process`'s
    `pid`, `stdin`, `stdout`, `returncode`, `wait()`, `send_signal`, `terminate` and `kill`.
    `returncode` is the exit code, or minus the signal that killed it, as the server reports
    them; signals go to the program itself, as a client passed them on."""

    def __init__(
        self,
        pid: int,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        reports: asyncio.StreamReader,
        connection: asyncio.StreamWriter,
    ) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = None
        self.returncode: int | None = None
        self._exited = asyncio.Event()
        self._follow = asyncio.ensure_future(self._follow_reports(reports, connection))

    async def _follow_reports(
        self, reports: asyncio.StreamReader, connection: asyncio.StreamWriter
    ) -> None:
        code: int | None = None
        try:
            with contextlib.suppress(OSError):  # a reset connection: as its end
                while code is None and (line := await reports.readline()):
                    kind, _, value = line.decode(errors="replace").strip().partition(" ")
                    if kind in ("exit", "signal") and value.lstrip("-").isdigit():
                        code = int(value) if kind == "exit" else -int(value)
            if code is None:
                # The server went away before the program ended (its orchestrator is ending):
                # nothing can report it any more, so it is ended here (a client exited 1).
                self._signal_group(signal.SIGKILL)
                code = 1
        except asyncio.CancelledError:  # the parent's loop is ending: so does the program,
            code = 1  # as the server kills its group once the connection closes
            raise
        finally:
            self.returncode = 1 if code is None else code
            self._exited.set()
            connection.close()

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)


async def start_served(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None = None,
    stderr: int = 2,
    limit: int = STREAM_LIMIT,
    socket_path: Path = Path(FORK_SERVER_SOCKET),
    client: Path = Path(FORK_CLIENT),
    programs: Collection[str] = CLIENT_PROGRAMS,
) -> ForkedProcess | None:
    """`command args` forked by the fork server with pipes on its stdin and stdout and `stderr`
    as its stderr, in `env` and `cwd` (its own session, as the server starts every program), if
    a fork server serves `command` (see `served`); None if it does not, or could not start it."""
    path = served(command, env, client=client, programs=programs)
    if path is None:
        return None
    payload = _request(path, args, env, cwd)
    loop = asyncio.get_running_loop()
    child_stdin, stdin = os.pipe()
    stdout, child_stdout = os.pipe()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        try:
            await loop.sock_connect(sock, str(socket_path))
            await send_request(sock, payload, (child_stdin, child_stdout, stderr))
        finally:
            os.close(child_stdin)
            os.close(child_stdout)
        reports, connection = await asyncio.open_unix_connection(sock=sock, limit=STREAM_LIMIT)
    except OSError:
        sock.close()
        os.close(stdin)
        os.close(stdout)
        return None
    try:
        async with asyncio.timeout(START_SECONDS):
            line = await reports.readline()
    except (TimeoutError, OSError):
        line = b""
    kind, _, pid = line.decode(errors="replace").strip().partition(" ")
    if kind != "pid" or not pid.isdigit():  # refused (`error …`), or no answer
        connection.close()
        with contextlib.suppress(OSError):
            await connection.wait_closed()
        os.close(stdin)
        os.close(stdout)
        return None
    return ForkedProcess(
        int(pid),
        await _writer(stdin),
        await _reader(stdout, limit),
        reports,
        connection,
    )


def _request(
    path: str, args: Sequence[str], env: Mapping[str, str], cwd: str | os.PathLike[str] | None
) -> bytes:
    """The client's request for `path args` (it would have sent its own absolute cwd)."""
    return request(
        os.path.basename(path),
        [path, *args],
        os.fsencode(os.path.abspath(cwd)) if cwd is not None else os.getcwdb(),
        current_umask(),
        {os.fsencode(k): os.fsencode(v) for k, v in env.items()},
        0,
    )


async def _reader(fd: int, limit: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    pipe = os.fdopen(fd, "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader


async def _writer(fd: int) -> asyncio.StreamWriter:
    loop = asyncio.get_running_loop()
    pipe = os.fdopen(fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
    return asyncio.StreamWriter(transport, protocol, None, loop)
