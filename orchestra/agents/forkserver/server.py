"""The fork server: one per orchestrator, a host process that serves every local-env agent tree.

It imports every agent program's modules once (the cyclic collector paused, then `gc.freeze`)
and then never runs an event loop or a second thread. For each connection on its unix socket it
forks a *request process* before reading anything, so that no tree's request (its environment
holds the agent's keys) ever enters the memory every later program is forked from. The request
process reads the request (`stub.py` sends it; the launcher sends a tree's first program),
enters the requester's sandbox (`namespaces.enter`: the mount, PID and IPC namespaces bwrap made
for the tree; a launcher on the host names the sandbox's first process instead), forks the
program there and exits: the program, a process of the sandbox's PID namespace, is re-parented
to this server (a child subreaper), which relays its exit status to the requester and SIGKILLs
its process group when the requester goes away first. A tree's first program (buzz-acp) is
instead re-parented to the sandbox's first process, the holder (`holder.py`), which exits as
buzz-acp does: the namespace then ends with buzz-acp, as when buzz-acp was that first process.
"""

from __future__ import annotations

import array
import contextlib
import gc
import os
import selectors
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestra.agents.forkserver.child import SERVER_SIGNALS, Start, become, name_process
from orchestra.agents.forkserver.namespaces import enter, same_namespaces
from orchestra.agents.forkserver.programs import ENTRY_POINTS, preload
from orchestra.processes import become_subreaper

MAGIC = b"buzz-fork/1"
MAX_REQUEST_BYTES = 4 * 1024 * 1024  # argv and environment of one program
REQUEST_SECONDS = 10.0
STANDARD_FDS = 3
PROCESS_NAME = "buzz-forkserver"
READY = b"ready\n"
END_REPORT_SECONDS = 1.0


class BadRequest(ValueError):
    """A request that names no known program or is not one."""


def parse_request(payload: bytes, fds: Sequence[int], programs: Mapping[str, str]) -> Start:
    """`MAGIC, program, cwd, umask, target, argc, argv…, NAME=value…`, NUL-separated; `target`:
    the host pid of the sandbox to start in (a launcher's request), 0 for the requester's own."""
    fields = payload.split(b"\0")
    if len(fields) < 6 or fields[0] != MAGIC:
        raise BadRequest("not a fork server request")
    program = fields[1].decode(errors="replace")
    if program not in programs:
        raise BadRequest(f"unknown program {program!r}")
    if len(fds) != STANDARD_FDS:
        raise BadRequest(f"expected {STANDARD_FDS} descriptors, got {len(fds)}")
    try:
        umask, target, argc = int(fields[3]), int(fields[4]), int(fields[5])
    except ValueError:
        raise BadRequest("bad umask, target or argument count") from None
    argv, variables = fields[6 : 6 + argc], fields[6 + argc :]
    if len(argv) != argc or argc < 1:
        raise BadRequest("bad argument count")
    env = dict(variable.partition(b"=")[::2] for variable in variables if b"=" in variable)
    argv_text = [os.fsdecode(arg) for arg in argv]
    return Start(
        program, programs[program], argv_text, env, fields[2], umask, tuple(fds), target=target
    )


def receive_request(sock: socket.socket) -> tuple[bytes, list[int]]:
    """The request's payload and descriptors (blocking, within REQUEST_SECONDS)."""
    sock.settimeout(REQUEST_SECONDS)
    data, fds = b"", array.array("i")
    ancillary = socket.CMSG_SPACE(STANDARD_FDS * fds.itemsize)
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk, messages, _, _ = sock.recvmsg(65536, ancillary)
        for level, kind, cmsg in messages:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(cmsg[: len(cmsg) - len(cmsg) % fds.itemsize])
        if not chunk:
            raise BadRequest("the request ended early")
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise BadRequest("request too large")
    return data[4 : 4 + int.from_bytes(data[:4], "big")], fds.tolist()


def serve_request(sock: socket.socket, report: int, programs: Mapping[str, str]) -> None:
    """In the request process: read, enter the sandbox, fork the program, report its pid to
    the server, exit. A launcher's request for a tree's first program (`target`: the sandbox's
    first process) is forked twice inside the sandbox instead, so that the program becomes a
    child of the sandbox's first process (the holder, which exits as it does); it is not the
    server's to report."""
    for signum in SERVER_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    code = 1
    try:
        payload, fds = receive_request(sock)
        start = parse_request(payload, fds, programs)
        peer = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        requester = int.from_bytes(peer[:4], sys.byteorder)
        on_host = same_namespaces(requester)
        targeted = on_host and start.target != 0
        target = start.target if targeted else 0 if on_host else requester
        if target:
            enter(target)
        pid = os.fork()
        if pid == 0 and targeted:
            if os.fork() == 0:
                become(start, sock, sandboxed=True)
            os._exit(0)  # its child is re-parented to the sandbox's first process
        if pid == 0:
            become(start, sock, sandboxed=bool(target))
        if targeted:
            os.waitpid(pid, 0)
        os.write(report, f"{0 if targeted else pid}\n".encode())
        code = 0
    except (BadRequest, OSError) as error:
        with contextlib.suppress(OSError):
            sock.sendall(f"error {error}\n".encode())
    os._exit(code)


@dataclass
class Client:
    """A requester's connection and, once forked, its program (`pid`, as the host numbers it)."""

    sock: socket.socket
    pid: int | None = None


@dataclass
class ForkServer:
    socket_path: Path
    programs: Mapping[str, str] = field(default_factory=lambda: ENTRY_POINTS)

    def __post_init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.wakeup_read, self.wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.running: dict[int, Client] = {}  # by program pid
        self.requests: set[int] = set()  # request processes
        self.exited: dict[int, int] = {}  # programs reaped before their request process reported
        self.stopping = False

    def listen(self) -> None:
        become_subreaper()  # the programs are re-parented here when their request process exits
        self.socket_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self.listener.bind(str(self.socket_path))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ)
        for signum in SERVER_SIGNALS:
            signal.signal(signum, lambda *_: None)  # the wakeup descriptor carries the signal
        signal.set_wakeup_fd(self.wakeup_write, warn_on_full_buffer=False)
        self.selector.register(self.wakeup_read, selectors.EVENT_READ)

    def serve(self) -> None:
        """Until TERM, INT or HUP: then every program still running is killed."""
        while not self.stopping:
            for key, _ in self.selector.select():
                if key.fileobj is self.listener:
                    self._accept()
                elif key.fd == self.wakeup_read:
                    self._signals()
                elif isinstance(key.data, Client):
                    self._readable(key.data)
                else:
                    self._reported(key.fd, key.data)
        self._end_requests()
        for pid in list(self.running):
            self._kill(pid)
        with contextlib.suppress(OSError):
            self.socket_path.unlink()

    def _end_requests(self) -> None:
        """Programs forked but not reported yet are followed (and so killed) too: reports get
        a moment to arrive, then request processes still reading their request are killed."""
        reports = {
            key.fd: key.data
            for key in self.selector.get_map().values()
            if isinstance(key.data, socket.socket)
        }
        deadline = time.monotonic() + END_REPORT_SECONDS
        while reports and (left := deadline - time.monotonic()) > 0:
            for key, _ in self.selector.select(left):
                if key.fd in reports:
                    self._reported(key.fd, reports.pop(key.fd))
        for pid in self.requests:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for report, sock in reports.items():
            os.set_blocking(report, True)  # EOF once the killed request process is gone
            self._reported(report, sock)

    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        report, writer = os.pipe2(os.O_CLOEXEC)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(report)
            serve_request(sock, writer, self.programs)
        self.requests.add(pid)
        os.close(writer)
        self.selector.register(report, selectors.EVENT_READ, sock)

    def _reported(self, report: int, sock: socket.socket) -> None:
        """The request process's one line: the program's pid (0: not ours to follow), or
        nothing if it failed (it told the requester why)."""
        line = os.read(report, 64).decode().strip()
        self.selector.unregister(report)
        os.close(report)
        if not line.isdigit() or line == "0":
            sock.close()
            return
        pid = int(line)
        client = Client(sock, pid)
        sock.setblocking(False)
        self.running[pid] = client
        self.selector.register(sock, selectors.EVENT_READ, client)
        if pid in self.exited:
            self._ended(pid, self.exited.pop(pid))

    def _readable(self, client: Client) -> None:
        """Requesters send nothing after their request: this is their end."""
        if client.sock.fileno() < 0:  # closed earlier in this round
            return
        try:
            if client.sock.recv(4096):
                return
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            pass
        if client.pid is not None and client.pid in self.running:
            self._kill(client.pid)

    def _kill(self, pid: int) -> None:
        """The program's process group (it has its own session), then its connection."""
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)
        self._close(self.running.pop(pid))

    def _close(self, client: Client) -> None:
        self.selector.unregister(client.sock)
        client.sock.close()

    def _signals(self) -> None:
        with contextlib.suppress(BlockingIOError):
            received = os.read(self.wakeup_read, 512)
            self.stopping = any(signum != signal.SIGCHLD for signum in received)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._ended(pid, status)

    def _ended(self, pid: int, status: int) -> None:
        if pid in self.requests:
            self.requests.discard(pid)
            return
        client = self.running.pop(pid, None)
        if client is None:  # a request process, or a program not reported yet
            self.exited[pid] = status
            return
        if os.WIFSIGNALED(status):
            client_send(client, f"signal {os.WTERMSIG(status)}")
        else:
            client_send(client, f"exit {os.waitstatus_to_exitcode(status)}")
        self._close(client)


def client_send(client: Client, line: str) -> None:
    with contextlib.suppress(OSError):
        client.sock.sendall(line.encode() + b"\n")


def run(socket_path: Path, programs: Mapping[str, str] = ENTRY_POINTS) -> None:
    """Preload, listen, say `ready` on stdout, serve."""
    name_process(PROCESS_NAME)
    gc.disable()  # during the imports (orchestra/startup.py); the programs resume it
    preload()
    gc.freeze()
    server = ForkServer(socket_path, programs)
    server.listen()
    os.write(sys.stdout.fileno(), READY)
    server.serve()


def main() -> None:
    args = sys.argv[1:]
    if len(args) != 2 or args[0] != "--socket":
        print("usage: python -m orchestra.agents.forkserver --socket PATH", file=sys.stderr)
        raise SystemExit(2)
    run(Path(args[1]))
    os._exit(0)
