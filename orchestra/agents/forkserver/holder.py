"""The first process of a sandbox whose programs the fork server starts (PID 1 of its PID
namespace), in place of the tree's first program, buzz-acp, which the server forks into the
sandbox as this process's child.

It says it runs on the descriptor named by its argument (the sandbox is complete only once bwrap
has exec'd it: the server must not enter its namespaces earlier), learns buzz-acp's pid from
its stdin (the launcher writes it), passes TERM, INT and HUP on to buzz-acp, reaps whatever is
re-parented to it, and exits as soon as buzz-acp has, with its status (128 + the signal that
killed it): the namespace and everything in it end with buzz-acp, as they did when buzz-acp
was the first process. Without a pid (the launcher went away) it exits 1.

Like `stub.py`, run as a script with `-S -I` (`forkserver.launch.holder_script`), built-in
modules only, where the host has no C compiler: elsewhere the launcher builds `holder.c`, which
keeps this contract in 0.1 MiB of private memory instead of 2.7 (`launch.write_holder`).
"""

import _signal  # type: ignore[import-not-found]  # `signal` would import enum: 3 ms more
import posix as os  # what `os` offers of it, without `os`'s imports: 0.17 MiB less private memory
import sys

FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP")
ended: dict[int, int] = {}  # pid: exit status, of every child reaped
program = [0]  # buzz-acp, once known


def end(status: int) -> None:
    os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


def reap(_signum: int, _frame: object) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == program[0]:
            end(status)
        ended[pid] = status


def forward(signum: int, _frame: object) -> None:
    if program[0]:
        try:
            os.kill(program[0], signum)
        except ProcessLookupError:
            pass


def main() -> None:
    _signal.signal(_signal.SIGCHLD, reap)
    for name in FORWARDED:
        _signal.signal(getattr(_signal, name), forward)
    ready = int(sys.argv[1])
    os.write(ready, b"ready\n")
    os.close(ready)
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 16)
        if not chunk:
            os._exit(1)
        line += chunk
    program[0] = int(line)
    if program[0] in ended:
        end(ended[program[0]])
    wakeup, woken = os.pipe()
    os.set_blocking(woken, False)
    _signal.set_wakeup_fd(woken)  # no signal lost between the check and the wait
    reap(0, None)
    while True:
        os.read(wakeup, 64)  # the handlers run once it returns
