"""Running, watching and ending processes, process groups and process trees.

Every "TERM, wait, KILL" of the package is one of these:

* `stop_group(leader, grace=…, hurry=…)`: a process started with `start_new_session=True` and
  everything in its group (a shell command, the relay, an agent's `buzz-acp`);
* `stop_tree(root, grace=…, known=…)`: a child and all its descendants, whatever groups they
  made for themselves (buzz-acp's agents, whose MCP servers and shells start their own);
* `stop_pids(pids, grace=…)`: processes that are not (or no longer) below a child of ours.

Each TERMs, waits up to `grace` seconds for the processes to exit (no longer once `hurry` is
set, nor once the stop itself is cancelled), KILLs what is left and reaps our own child. Exits are awaited on pidfds, so a wait ends
the moment the last process exits; zombies count as exited. Trees are read from /proc through
psutil, imported on first use so that a program that only ends its own group does not pay
for it at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

#: A group leader: our asyncio or `subprocess` child, or the pid of any process.
Leader = asyncio.subprocess.Process | subprocess.Popen[bytes] | int


class Child(Protocol):
    """A process whose exit we can await: our asyncio child, or a program the fork server
    forked for us (`orchestra.agents.forkserver.spawn.ForkedProcess`)."""

    @property
    def pid(self) -> int: ...
    async def wait(self) -> int: ...


PR_SET_CHILD_SUBREAPER = 36
#: How often liveness is polled where a pidfd cannot be opened (no pidfd_open, or denied).
POLL_SECONDS = 0.05
#: `kill_processes_in`: at most this many passes in all, and this many more after one that
#: killed nothing but read an empty environment
SWEEP_MAX_PASSES = 32
SWEEP_UNREAD_PASSES = 3
COMMAND_TIMEOUT_SECONDS = 120.0
#: The exit status reported for a command that could not start or was killed on timeout.
FAILED_TO_RUN = -1


# --- signals and liveness ------------------------------------------------------------------


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Signal the process group `pgid`; a group that is gone or not ours is skipped."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def signal_tree(pids: Iterable[int], sig: signal.Signals) -> None:
    """Signal each pid's process group, or the pid alone where it shares our own group."""
    own_group = os.getpgrp()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(pid)
            if group != own_group:
                os.killpg(group, sig)
            else:
                os.kill(pid, sig)


def descendants(pid: int) -> list[int]:
    """Pids of every live descendant of `pid` (empty when it is gone)."""
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def alive(pid: int) -> bool:
    """The process runs: it exists and is not a zombie (exited, not yet reaped)."""
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


async def wait_gone(pids: Iterable[int]) -> None:
    """Return once every one of `pids` has exited; they need not be our children."""
    for pid in pids:
        await _exited(pid)


async def _exited(pid: int) -> None:
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (OSError, AttributeError):  # no pidfds here: poll
        while alive(pid):  # noqa: ASYNC110 - nothing to wait on for a process that is not ours
            await asyncio.sleep(POLL_SECONDS)
        return
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()

    def exited() -> None:  # a pidfd becomes readable when its process exits
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(pidfd, exited)
    try:
        await readable
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


async def first_of(
    work: Awaitable[object], hurry: asyncio.Event | None, seconds: float | None
) -> bool:
    """Wait for `work`, at most `seconds` (None: no limit), and no longer once `hurry` is set.
    True when `work` finished. Unfinished work is cancelled: wrap it in `asyncio.shield` to
    keep it running."""
    task = asyncio.ensure_future(work)
    hurried = asyncio.ensure_future(hurry.wait()) if hurry is not None else None
    try:
        await asyncio.wait(
            [task] if hurried is None else [task, hurried],
            timeout=seconds,
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        for waiter in (task, hurried):
            if waiter is not None and not waiter.done():
                waiter.cancel()
    return task.done() and not task.cancelled()


# --- TERM, wait, KILL ------------------------------------------------------------------------


async def stop_group(leader: Leader, *, grace: float, hurry: asyncio.Event | None = None) -> None:
    """TERM the process group `leader` leads, wait until the leader exits (at most `grace`
    seconds), then KILL whatever is left of the group: members that ignored TERM or outlived
    the leader. The leader is reaped when it is our child."""
    signal_group(_pid_of(leader), signal.SIGTERM)
    try:
        await first_of(_exit_of(leader), hurry, grace)
    except asyncio.CancelledError:
        signal_group(_pid_of(leader), signal.SIGKILL)  # a stop cut short still stops
        raise
    await kill_group(leader)


async def kill_group(leader: Leader) -> None:
    """KILL the process group `leader` leads at once, and reap the leader when it is ours."""
    signal_group(_pid_of(leader), signal.SIGKILL)
    if isinstance(leader, asyncio.subprocess.Process):
        await leader.wait()
    elif isinstance(leader, subprocess.Popen) and leader.poll() is None:
        await wait_gone([leader.pid])
        leader.wait()  # returns at once: it has exited


async def stop_tree(
    root: Child,
    *,
    grace: float,
    known: Iterable[int] = (),
    hurry: asyncio.Event | None = None,
) -> None:
    """TERM `root` and every descendant (each one's group), wait until all have exited (at most
    `grace` seconds), KILL what is left, and reap `root`.

    `known` are descendants seen earlier: once their parent has exited they are no longer
    reachable through parent links.
    """
    pids = [root.pid, *descendants(root.pid)]
    pids += [pid for pid in known if pid not in pids]
    await _stop(pids, grace, hurry, born_meanwhile=lambda: descendants(root.pid))
    await root.wait()


async def stop_pids(
    pids: Iterable[int], *, grace: float, hurry: asyncio.Event | None = None
) -> None:
    """TERM each pid's group, wait until all have exited (at most `grace` s), KILL what is left."""
    await _stop(list(pids), grace, hurry)


async def _stop(
    pids: list[int],
    grace: float,
    hurry: asyncio.Event | None,
    born_meanwhile: Callable[[], list[int]] = list,
) -> None:
    signal_tree(pids, signal.SIGTERM)
    try:
        if await first_of(wait_gone(pids), hurry, grace):
            return
    except asyncio.CancelledError:
        signal_tree([pid for pid in pids if alive(pid)], signal.SIGKILL)
        raise
    pids += [pid for pid in born_meanwhile() if pid not in pids]
    signal_tree([pid for pid in pids if alive(pid)], signal.SIGKILL)


def _pid_of(leader: Leader) -> int:
    return leader if isinstance(leader, int) else leader.pid


async def _exit_of(leader: Leader) -> None:
    # Not `Process.wait()`: that also waits for the pipes to close, which a member of the
    # group that outlived the leader may hold open.
    if isinstance(leader, asyncio.subprocess.Process):
        if leader.returncode is None:
            await wait_gone([leader.pid])
    elif not isinstance(leader, subprocess.Popen) or leader.poll() is None:
        await wait_gone([_pid_of(leader)])


# --- what a sandbox left behind --------------------------------------------------------------


def last_allocated_pid() -> int | None:
    """The pid the kernel handed out most recently (Linux: the last field of /proc/loadavg)."""
    try:
        fields = Path("/proc/loadavg").read_text(encoding="ascii").split()
        return int(fields[-1])
    except (OSError, ValueError, IndexError):
        return None


def kill_processes_in(
    directory: Path,
    *,
    variables: tuple[str, ...] = ("HOME", "TMPDIR"),
    exclude: Iterable[int] = (),
    newer_than: int | None = None,
) -> list[int]:
    """SIGKILL every process one of whose `variables` names `directory` or a path inside it;
    returns their pids. `newer_than`: `last_allocated_pid()` taken before the directory's first
    process started. Pids are handed out in increasing order, so only younger processes are
    read (all of them once pids have wrapped around since).

    Passes repeat while one kills something (a process killed in a pass may have forked a
    child after the pass listed the pids) and, a few times `POLL_SECONDS` apart, while one
    reads an empty environment (a process in the middle of an exec shows none)."""
    root = str(directory.resolve())
    skip = {os.getpid(), *exclude}
    newest = last_allocated_pid()
    floor = 0  # no mark, or pids have wrapped around since it: read every process
    if newer_than is not None and newest is not None and newest >= newer_than:
        floor = newer_than
    killed: list[int] = []
    unread_passes = 0
    for _ in range(SWEEP_MAX_PASSES):
        found, unread = _sweep_pass(root, variables, skip, floor)
        killed += found
        skip.update(found)
        if found:
            continue
        if not unread or unread_passes == SWEEP_UNREAD_PASSES:
            break
        unread_passes += 1
        time.sleep(POLL_SECONDS)
    return killed


def _sweep_pass(
    root: str, variables: tuple[str, ...], skip: set[int], floor: int
) -> tuple[list[int], bool]:
    """One pass of `kill_processes_in`: the pids killed, and whether an environment read empty."""
    import psutil

    killed: list[int] = []
    unread = False
    for pid in psutil.pids():
        if pid <= floor or pid in skip:
            continue
        try:
            environment = psutil.Process(pid).environ()
        except psutil.Error:  # gone, a zombie, a kernel thread, or another user's
            continue
        unread = unread or not environment
        if any(_inside(environment.get(name), root) for name in variables):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed, unread


def _inside(path: str | None, root: str) -> bool:
    return path is not None and (path == root or path.startswith(root + "/"))


# --- this process --------------------------------------------------------------------------


def tied(argv: Sequence[str]) -> list[str]:
    """`argv` run so that the kernel SIGKILLs it the moment this process dies, by any signal,
    SIGKILL included: util-linux `setpriv --pdeathsig` sets PR_SET_PDEATHSIG and execs `argv`
    (same pid, and the setting survives the exec). Unchanged where setpriv cannot do it.

    The signal follows the death of the *thread* that forked, so spawn from the main thread
    (asyncio's subprocesses are forked on the event loop's thread), never from a worker.
    """
    setpriv = _setpriv_with_pdeathsig()
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else list(argv)


@cache
def _setpriv_with_pdeathsig() -> str | None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    try:  # --pdeathsig needs util-linux >= 2.33
        probe = subprocess.run(
            [setpriv, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return setpriv if probe.returncode == 0 else None


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process instead of init (Linux).

    A shell child whose parent died first (e.g. a background job that ignores SIGTERM) is
    otherwise unreachable through parent links, and would outlive the tree.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


# --- short commands --------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str

    def tail(self, lines: int = 20) -> str:
        return "\n".join((self.stderr or self.stdout).strip().splitlines()[-lines:])


async def run_command(
    argv: list[str],
    *,
    timeout_seconds: float = COMMAND_TIMEOUT_SECONDS,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> CommandResult:
    """Run a short CLI command (`docker …`), output captured, `stdin` (when given) as its
    input. A command that cannot start or exceeds `timeout` (then killed) is a failed result
    whose stderr says so; nothing raises."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=None if env is None else dict(env),
        )
    except OSError as error:
        return CommandResult(FAILED_TO_RUN, "", f"cannot run {argv[0]}: {error}")
    try:
        async with asyncio.timeout(timeout_seconds):
            stdout, stderr = await process.communicate(stdin)
    except TimeoutError:
        process.kill()
        await process.wait()
        return CommandResult(
            FAILED_TO_RUN, "", f"{shlex.join(argv[:3])} timed out after {timeout_seconds:g} s"
        )
    return CommandResult(
        process.returncode if process.returncode is not None else FAILED_TO_RUN,
        stdout.decode("utf-8", "replace"),
        stderr.decode("utf-8", "replace"),
    )
