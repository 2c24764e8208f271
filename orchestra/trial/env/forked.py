"""The orchestrator's side of the fork server (orchestra/agents/forkserver): one server process
per orchestrator, started at the first sandboxed tree, and a tree's first program started
through it inside the tree's sandbox.

A forked tree's sandbox runs the holder (`FORK_HOLDER`) as its first process; the launcher asks
the server for buzz-acp in that sandbox, as the holder's child, and tells the holder its pid:
the holder, and with it bwrap, exits as buzz-acp does.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Collection, Sequence
from functools import cache
from pathlib import Path, PurePath
from typing import BinaryIO

import psutil

from orchestra.agents.forkserver.launch import (
    server_command,
    stub_script,
    write_holder,
    write_script,
)
from orchestra.agents.forkserver.programs import ENTRY_POINTS
from orchestra.agents.forkserver.server import READY
from orchestra.agents.forkserver.spawn import send_request
from orchestra.agents.forkserver.stub import current_umask, request
from orchestra.paths import ForkServerPaths
from orchestra.processes import tied

START_SECONDS = 60.0  # its imports, on a loaded machine
DIRECTORY_PREFIX = "buzz-fork-"
#: host variables the server keeps: it holds no secret, every program gets its own environment
SERVER_VARIABLES = ("PATH", "LANG", "LC_ALL")


class ForkServerError(OSError):
    """The fork server cannot start, or refused a tree's first program."""


class ForkServer:
    """This orchestrator's fork server: its directory now, its process at the first `running`."""

    def __init__(
        self,
        python: str = sys.executable,
        command: Callable[[Path], list[str]] | None = None,
        programs: Collection[str] = tuple(ENTRY_POINTS),
    ) -> None:
        """`command(socket)`: the server's command line (default: this package's server), which
        serves `programs` (by name; a tree whose first program is another runs by plain exec)."""
        self.programs = frozenset(programs)
        sweep_abandoned(Path(tempfile.gettempdir()))
        self.paths = ForkServerPaths(Path(tempfile.mkdtemp(prefix=DIRECTORY_PREFIX)))
        self.paths.owner.write_text(_process_mark(psutil.Process()))
        write_script(self.paths.client, stub_script(python))
        write_holder(self.paths.holder, python)
        self._command = command or (lambda socket: server_command(socket, python=python))
        self._process: subprocess.Popen[bytes] | None = None
        self._ready: asyncio.Future[None] | None = None
        atexit.register(self.close)

    async def running(self) -> ForkServerPaths:
        """The server's paths once it serves (started now if it is not running)."""
        if self._process is None or self._process.poll() is not None or self._ready is None:
            # spawned on the event loop's thread: `tied` follows the thread that spawns
            self._process = self._spawn()
            self._ready = asyncio.ensure_future(asyncio.to_thread(_await_ready, self._process))
        await asyncio.shield(self._ready)
        return self.paths

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = {name: os.environ[name] for name in SERVER_VARIABLES if name in os.environ}
        return subprocess.Popen(
            tied(self._command(self.paths.socket)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def close(self) -> None:
        """End the server (its programs end with their sandboxes) and remove its directory."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(10)
        shutil.rmtree(self.paths.root, ignore_errors=True)


def _process_mark(process: psutil.Process) -> str:
    return f"{process.pid} {process.create_time()!r}"  # a pid alone may be reused


def sweep_abandoned(directory: Path) -> None:
    """Remove the fork-server directories in `directory` whose orchestrator is gone without
    removing its own (killed by SIGKILL, its `atexit` never ran). A directory without an owner
    is left alone: another tool's, or one still being made."""
    for root in directory.glob(f"{DIRECTORY_PREFIX}*"):
        paths = ForkServerPaths(root)
        try:
            owner = paths.owner.read_text()
            pid = int(owner.split()[0])
        except (OSError, ValueError, IndexError):
            continue
        try:
            alive = _process_mark(psutil.Process(pid)) == owner
        except psutil.Error:
            alive = False
        if not alive:
            shutil.rmtree(root, ignore_errors=True)


def _await_ready(process: subprocess.Popen[bytes]) -> None:
    assert process.stdout is not None
    if process.stdout.readline() != READY:  # EOF if it failed (its stderr says why)
        process.kill()
        process.wait()
        raise ForkServerError(f"the fork server did not start (exit {process.returncode})")


@cache
def fork_server() -> ForkServer:
    return ForkServer()


async def start_first(
    paths: ForkServerPaths,
    holder: int,
    holder_stdin: asyncio.StreamWriter,
    command: Sequence[str],
    env: dict[str, str],
    cwd: PurePath,
    stdout: Path,
    stderr: Path,
) -> None:
    """`command` (buzz-acp) in the sandbox whose first process is `holder`, as its child; the
    holder is told its pid."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await loop.sock_connect(sock, str(paths.socket))
        payload = request(
            Path(command[0]).name,
            list(command),
            os.fsencode(cwd),
            current_umask(),
            {os.fsencode(k): os.fsencode(v) for k, v in env.items()},
            holder,
        )
        streams = _streams(stdout, stderr)
        try:
            await send_request(sock, payload, [stream.fileno() for stream in streams])
        finally:
            for stream in streams:
                stream.close()
        reader, writer = await asyncio.open_unix_connection(sock=sock)
    except BaseException:
        sock.close()
        raise
    try:
        async with asyncio.timeout(START_SECONDS):
            line = (await reader.readline()).decode().strip()
    finally:
        writer.close()
    kind, _, pid = line.partition(" ")
    if kind != "pid" or not pid.isdigit():
        raise ForkServerError(f"the fork server could not start the tree: {line or 'no answer'}")
    holder_stdin.write(f"{pid}\n".encode())  # its number inside the sandbox
    await holder_stdin.drain()


def _streams(stdout: Path, stderr: Path) -> list[BinaryIO]:
    """The program's stdin (/dev/null), stdout and stderr, opened."""
    streams: list[BinaryIO] = [open(os.devnull, "rb")]  # closed by the caller
    try:
        streams += [stdout.open("ab"), stderr.open("ab")]
    except BaseException:
        for stream in streams:
            stream.close()
        raise
    return streams
