"""Ending a process tree (agent-harness.md §1.10).

An agent runs in its own process group, but its MCP servers and their shells start their
own groups too, so a plain group kill would orphan them. We collect every descendant from
/proc before signalling and signal each one's group.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

PR_SET_CHILD_SUBREAPER = 36
READ_LIMIT = 64 * 1024 * 1024  # the ACP pipe's line limit: prompts and results can be large


async def start_agent_process(
    command: str, args: tuple[str, ...] | list[str], cwd: str
) -> asyncio.subprocess.Process:
    """Start the agent in its own process group with buzz-acp's complete environment (§1.8).

    Kept free of the ACP SDK so that buzz-acp can start its agents before importing it: the
    agents' start-up then overlaps buzz-acp's own (two processes, two cores).
    """
    return await asyncio.create_subprocess_exec(
        command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None,
        env=dict(os.environ),
        cwd=cwd,
        start_new_session=True,
        limit=READ_LIMIT,
    )


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process instead of init.

    A shell child whose parent died first (e.g. a background job that ignores SIGTERM) is
    otherwise unreachable through /proc parent links, and would outlive the tree.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def exit_now(code: int) -> NoReturn:
    """Exit once the process's own shutdown is done, skipping interpreter finalization.

    Tearing down the interpreter (module and object finalization of the SDKs, pydantic, httpx)
    costs 0.15-0.3 s of CPU per process, paid in series by buzz-dev-mcp, buzz-agent and
    buzz-acp at every trial's teardown. Everything that must outlive the process is written by
    then (the event and prompt logs flush every line); the std streams and logging handlers
    are flushed here. Not for error paths that still have to print a traceback.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def descendants(root_pid: int) -> list[int]:
    """Pids of every live descendant of `root_pid` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Field 4 (ppid) follows the parenthesised command, which may itself contain spaces.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    stack = [root_pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def signal_tree(pids: list[int], sig: signal.Signals) -> None:
    """Signal each pid's process group (and the pid itself, should it share ours)."""
    own_group = os.getpgrp()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(pid)
            if group != own_group:
                os.killpg(group, sig)
            else:
                os.kill(pid, sig)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


async def _term_then_kill(pids: list[int], grace_s: float) -> None:
    """TERM every pid's group, wait for them to exit (at most `grace_s`), KILL what is left."""
    signal_tree(pids, signal.SIGTERM)
    deadline = asyncio.get_running_loop().time() + grace_s
    # These are not our children (or are orphans we do not await): poll their exit.
    while any(alive(pid) for pid in pids) and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    leftovers = [pid for pid in pids if alive(pid)]
    if leftovers:
        signal_tree(leftovers, signal.SIGKILL)


async def end_orphans(grace_s: float = 2.0) -> None:
    """End whatever descendants of this process outlived their agent's tree (see become_subreaper)."""
    pids = descendants(os.getpid())
    if pids:
        await _term_then_kill(pids, grace_s)


async def end_tree(
    process: asyncio.subprocess.Process, grace_s: float = 2.0, known: list[int] | None = None
) -> None:
    """TERM the agent and all its descendants, wait, then KILL whatever is left.

    `known` are descendants seen earlier: once the agent has exited they are no longer
    reachable through /proc parent links.
    """
    pids = [process.pid, *descendants(process.pid)]
    pids += [pid for pid in known or [] if pid not in pids]
    signal_tree(pids, signal.SIGTERM)
    deadline = asyncio.get_running_loop().time() + grace_s
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), grace_s)
    pids += [pid for pid in descendants(process.pid) if pid not in pids]
    # Descendants are not our children, so there is nothing to await: poll their exit.
    while any(alive(pid) for pid in pids[1:]) and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    leftovers = [pid for pid in pids if alive(pid)]
    if leftovers:
        signal_tree(leftovers, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await process.wait()
