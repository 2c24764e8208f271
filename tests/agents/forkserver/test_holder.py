"""The holder's contract (holder.py's docstring), kept by both of its builds: holder.c compiled
by the launcher and holder.py where no compiler is found. Each runs as the first process of a
real PID namespace (bwrap), and its "buzz-acp" is a process re-parented to it, as the fork
server's double fork makes it."""

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from orchestra.agents.forkserver.launch import COMPILERS, write_holder
from orchestra.trial.env.sandbox import sandbox_support

WAIT_SECONDS = 20
pytestmark = pytest.mark.skipif(
    sandbox_support().program is None, reason=f"no bwrap here: {sandbox_support().problem}"
)


@pytest.fixture(params=["holder.c", "holder.py"])
def holder(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    compiled = request.param == "holder.c"
    if compiled and not any(map(shutil.which, COMPILERS)):
        pytest.skip("no C compiler here")
    path = write_holder(tmp_path / "buzz-tree-init", sys.executable, COMPILERS if compiled else ())
    assert path.read_bytes().startswith(b"#!") is not compiled
    return path


class Sandbox:
    """`holder` as PID 1 of a new PID namespace, said `ready`."""

    def __init__(self, holder: Path) -> None:
        reader, writer = os.pipe()
        bwrap = str(sandbox_support().program)
        namespace = ["--unshare-pid", "--as-pid-1", "--die-with-parent"]
        mounts = ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
        command = [bwrap, *namespace, *mounts, "--", str(holder), str(writer)]
        self.bwrap = subprocess.Popen(command, stdin=subprocess.PIPE, pass_fds=(writer,))
        os.close(writer)
        with os.fdopen(reader, "rb") as ready:
            assert ready.readline() == b"ready\n"
        (first,) = psutil.Process(self.bwrap.pid).children()
        self.pid = first.pid
        assert first.name() == "buzz-tree-init"
        self.forkers: list[subprocess.Popen[str]] = []

    def adopt(self, script: str, later: float = 0.0) -> int:
        """A process running `script` in the namespace, re-parented to the holder `later`
        seconds after its pid is known: its pid there."""
        detached = f"({script}) </dev/null >/dev/null 2>&1 & echo $!; exec sleep {later}"  # sleep reaps no child
        nsenter = ["nsenter", "-t", str(self.pid), "-p", "--", "sh", "-c", detached]
        forker = subprocess.Popen(nsenter, stdout=subprocess.PIPE, text=True)
        assert forker.stdout is not None
        self.forkers.append(forker)
        pid = int(forker.stdout.readline())
        if not later:
            forker.wait(WAIT_SECONDS)  # the process is the holder's child now
        return pid

    def tell(self, line: bytes) -> None:
        assert self.bwrap.stdin is not None
        self.bwrap.stdin.write(line)
        self.bwrap.stdin.close()

    def status(self) -> int:
        return self.bwrap.wait(WAIT_SECONDS)


@pytest.fixture
def sandbox(holder: Path) -> Iterator[Sandbox]:
    sandbox = Sandbox(holder)
    yield sandbox
    if sandbox.bwrap.poll() is None:
        sandbox.bwrap.kill()
        sandbox.bwrap.wait()
    for forker in sandbox.forkers:
        forker.wait(WAIT_SECONDS)


def test_exits_with_its_programs_status_once_told_its_pid(sandbox: Sandbox) -> None:
    """Orphans are reaped, and a program that ended before its pid was told is found then."""
    sandbox.adopt("sleep 0.2; exit 3")  # another process of the tree
    program = sandbox.adopt("sleep 0.2; exit 7")
    time.sleep(0.6)  # both have ended: the pid comes later
    sandbox.tell(f"{program}\n".encode())
    assert sandbox.status() == 7


def test_waits_for_a_program_that_becomes_its_child_after_its_pid_came(
    sandbox: Sandbox,
) -> None:
    """The fork server's intermediate process may exit after the program told its pid."""
    program = sandbox.adopt("sleep 1; exit 5", later=0.5)
    sandbox.tell(f"{program}\n".encode())
    assert sandbox.status() == 5


def test_passes_term_on_and_exits_as_the_signal_killed_it(sandbox: Sandbox) -> None:
    program = sandbox.adopt("exec sleep 60")
    sandbox.tell(f"{program}\n".encode())
    assert len(psutil.Process(sandbox.pid).children()) == 1
    deadline = time.monotonic() + WAIT_SECONDS
    while sandbox.bwrap.poll() is None and time.monotonic() < deadline:
        os.kill(sandbox.pid, signal.SIGTERM)  # dropped until the holder has read the pid
        time.sleep(0.1)
    assert sandbox.status() == 128 + signal.SIGTERM


def test_exits_1_without_a_pid(sandbox: Sandbox) -> None:
    sandbox.tell(b"")
    assert sandbox.status() == 1
