"""`orchestra.processes` with real processes: groups, trees, processes that are not ours, the
hurry event, cancellation, pidfd and polled exit waits, the sandbox sweep and short commands.

Readiness is always a line the process prints once its signal dispositions are in place, so
no test sleeps to let something happen.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orchestra import processes
from orchestra.processes import (
    FAILED_TO_RUN,
    alive,
    descendants,
    first_of,
    kill_group,
    kill_processes_in,
    last_allocated_pid,
    run_command,
    stop_group,
    stop_pids,
    stop_tree,
    wait_gone,
)

#: A bound on waits that should end at once; only reached when the code under test is broken.
LIMIT_S = 30.0
#: bash that ignores TERM, starts a TERM-ignoring `sleep` in its group, prints its pid, waits.
STUBBORN_GROUP = "trap '' TERM; sleep 600 & echo $!; while :; do wait; done"
#: bash that dies of TERM but leaves a TERM-ignoring member of its group behind (which prints
#: its pid once it ignores TERM).
LEAVES_A_MEMBER = "(trap '' TERM; echo $BASHPID; exec sleep 600) & wait"


async def start(script: str, *, new_session: bool = True) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        script,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=new_session,
    )


def start_popen(argv: list[str]) -> subprocess.Popen[bytes]:
    """A `subprocess` child, as the embedded stack starts its relay."""
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True
    )


async def read_line(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), LIMIT_S)
    assert line, "the process exited before it was ready"
    return line.decode().strip()


async def test_a_group_that_ignores_term_is_killed_after_the_grace() -> None:
    leader = await start(STUBBORN_GROUP)
    member = int(await read_line(leader))
    await asyncio.wait_for(stop_group(leader, grace=0.2), LIMIT_S)
    assert leader.returncode == -signal.SIGKILL
    await asyncio.wait_for(wait_gone([member]), LIMIT_S)
    assert not alive(member)


async def test_members_that_outlive_their_leader_are_killed() -> None:
    leader = await start(LEAVES_A_MEMBER)
    member = int(await read_line(leader))
    await asyncio.wait_for(stop_group(leader, grace=LIMIT_S), LIMIT_S * 2)
    assert leader.returncode == -signal.SIGTERM  # the leader went on TERM, inside the grace
    await asyncio.wait_for(wait_gone([member]), LIMIT_S)


async def test_hurry_ends_the_grace_at_once() -> None:
    leader = await start("trap 'echo term' TERM; echo ready; while :; do sleep 600 & wait $!; done")
    assert await read_line(leader) == "ready"
    hurry = asyncio.Event()
    stopping = asyncio.create_task(stop_group(leader, grace=3600, hurry=hurry))
    assert await read_line(leader) == "term"  # TERMed, handled, still running
    assert not stopping.done()
    hurry.set()
    await asyncio.wait_for(stopping, LIMIT_S)
    assert leader.returncode == -signal.SIGKILL


async def test_a_cancelled_stop_still_kills_the_group() -> None:
    leader = await start("trap 'echo term' TERM; echo ready; while :; do sleep 600 & wait $!; done")
    assert await read_line(leader) == "ready"
    stopping = asyncio.create_task(stop_group(leader, grace=3600))
    assert await read_line(leader) == "term"
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert await asyncio.wait_for(leader.wait(), LIMIT_S) == -signal.SIGKILL


async def test_a_popen_leader_and_a_pid_that_is_not_ours() -> None:
    popen = start_popen(["bash", "-c", STUBBORN_GROUP])
    assert popen.stdout is not None
    member = int(popen.stdout.readline())
    await asyncio.wait_for(stop_group(popen, grace=0.2), LIMIT_S)
    assert popen.returncode == -signal.SIGKILL  # reaped
    popen.stdout.close()
    await asyncio.wait_for(wait_gone([member]), LIMIT_S)
    # By pid only, as `orchestra stack down` stops a relay another process started.
    other = await start("echo ready; exec sleep 600")
    assert await read_line(other) == "ready"
    await asyncio.wait_for(stop_group(other.pid, grace=LIMIT_S), LIMIT_S * 2)
    assert await other.wait() == -signal.SIGTERM


async def test_kill_group_kills_without_term() -> None:
    leader = await start("echo ready; exec sleep 600")
    assert await read_line(leader) == "ready"
    await asyncio.wait_for(kill_group(leader), LIMIT_S)
    assert leader.returncode == -signal.SIGKILL  # a TERM first would have ended it with -15


async def test_a_tree_across_groups_is_ended_and_known_orphans_too() -> None:
    # The root's child runs in a session of its own (as an MCP server and its shells do), so a
    # group kill of the root would miss it; it ignores TERM and prints its pid once it does.
    root = await start("setsid bash -c \"trap '' TERM; echo \\$\\$; exec sleep 600\" & wait")
    child = int(await read_line(root))
    assert os.getpgid(child) != os.getpgid(root.pid)
    assert descendants(root.pid) == [child]
    # A process the caller saw in the tree earlier, no longer reachable through parent links.
    orphan = await start("trap '' TERM; echo ready; exec sleep 600")
    assert await read_line(orphan) == "ready"
    await asyncio.wait_for(stop_tree(root, grace=0.3, known=[orphan.pid]), LIMIT_S)
    assert root.returncode == -signal.SIGTERM
    await asyncio.wait_for(wait_gone([child]), LIMIT_S)
    assert await asyncio.wait_for(orphan.wait(), LIMIT_S) == -signal.SIGKILL


async def test_stop_pids_ends_processes_that_are_not_our_children() -> None:
    # The shell exits after starting a TERM-ignoring `sleep`, which is re-parented away from
    # us (to init or a subreaper) and prints its pid once it ignores TERM. (A `subprocess`
    # shell: asyncio's `wait()` may also wait for the pipe the `sleep` keeps open.)
    shell = start_popen(["bash", "-c", "(trap '' TERM; echo $BASHPID; exec sleep 600) &"])
    assert shell.stdout is not None
    stray = int(shell.stdout.readline())
    assert shell.wait(LIMIT_S) == 0
    shell.stdout.close()
    assert stray not in descendants(os.getpid())
    await asyncio.wait_for(stop_pids([stray], grace=0.2), LIMIT_S)
    await asyncio.wait_for(wait_gone([stray]), LIMIT_S)
    assert not alive(stray)


async def test_a_zombie_counts_as_gone() -> None:
    child = start_popen([sys.executable, "-c", "pass"])
    await asyncio.wait_for(wait_gone([child.pid]), LIMIT_S)
    assert not alive(child.pid)  # exited, not yet reaped
    assert child.wait() == 0
    assert child.stdout is not None
    child.stdout.close()


async def test_exits_are_polled_where_pidfds_are_not_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_pidfds(pid: int, flags: int = 0) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(processes.os, "pidfd_open", no_pidfds)
    leader = await start(STUBBORN_GROUP)
    member = int(await read_line(leader))
    await asyncio.wait_for(stop_group(leader, grace=0.2), LIMIT_S)
    await asyncio.wait_for(wait_gone([member]), LIMIT_S)
    assert leader.returncode == -signal.SIGKILL and not alive(member)


async def test_first_of_reports_work_hurry_and_timeout() -> None:
    assert await first_of(asyncio.sleep(0), None, None) is True
    hurry = asyncio.Event()
    hurry.set()
    forever = asyncio.get_running_loop().create_future()
    assert await first_of(forever, hurry, None) is False
    assert forever.cancelled()  # unfinished work is cancelled ...
    kept = asyncio.get_running_loop().create_future()
    assert await first_of(asyncio.shield(kept), None, 0.01) is False
    assert not kept.done()  # ... unless shielded
    kept.cancel()


async def test_the_sandbox_sweep_kills_processes_living_in_the_directory(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    (sandbox / "home").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    def spawn(home: Path, tmpdir: Path) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={"PATH": os.defpath, "HOME": str(home), "TMPDIR": str(tmpdir)},
        )
        # Popen returns once the exec began: its environment may not be readable yet
        assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        return process

    older = spawn(sandbox / "home", outside)
    floor = last_allocated_pid()
    assert floor is not None
    by_tmpdir = spawn(outside, sandbox)
    excluded = spawn(sandbox, sandbox)
    bystander = spawn(outside, outside)
    prefix_only = spawn(Path(f"{sandbox}-other"), outside)
    everyone = (older, by_tmpdir, excluded, bystander, prefix_only)
    try:
        # Only processes younger than the floor are read.
        assert kill_processes_in(sandbox, exclude=[excluded.pid], newer_than=floor) == [
            by_tmpdir.pid
        ]
        assert by_tmpdir.wait(LIMIT_S) == -signal.SIGKILL
        # A floor above the newest pid means pids wrapped around: every process is read.
        wrapped = by_tmpdir.pid + 10**9
        assert kill_processes_in(sandbox, exclude=[excluded.pid], newer_than=wrapped) == [older.pid]
        assert older.wait(LIMIT_S) == -signal.SIGKILL
        assert all(process.poll() is None for process in (excluded, bystander, prefix_only))
    finally:
        for process in everyone:
            process.kill()
            process.wait()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.close()
            process.stdout.close()


async def test_the_sandbox_sweep_leaves_nothing_of_a_shell_that_keeps_starting_processes(
    tmp_path: Path,
) -> None:
    """The shell forks children while a pass reads the processes (they are younger than the
    pass's list) and execs them (a process mid-exec reads as an empty environment): the sweep
    goes on until a pass finds nothing, so a second sweep finds nothing either."""
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    floor = last_allocated_pid()
    shell = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        "echo ready; while :; do sleep 600 & done",
        stdout=asyncio.subprocess.PIPE,
        env={"PATH": os.defpath, "HOME": str(sandbox)},
        start_new_session=True,
    )
    try:
        assert shell.stdout is not None and await shell.stdout.readline() == b"ready\n"
        killed = kill_processes_in(sandbox, newer_than=floor)
        assert shell.pid in killed
        async with asyncio.timeout(LIMIT_S):
            assert await shell.wait() == -signal.SIGKILL
            await wait_gone(killed)
        assert kill_processes_in(sandbox, newer_than=floor) == []
    finally:
        kill_processes_in(sandbox, newer_than=floor)
        if shell.returncode is None:
            shell.kill()
            await shell.wait()


async def test_run_command_captures_output_and_never_raises() -> None:
    done = await run_command(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert done.tail() == "err"
    missing = await run_command(["no-such-program-xyz"])
    assert (
        missing.returncode == FAILED_TO_RUN and "cannot run no-such-program-xyz" in missing.stderr
    )
    slow = await run_command(["sleep", "600"], timeout_seconds=0.1)
    assert slow.returncode == FAILED_TO_RUN and slow.stderr == "sleep 600 timed out after 0.1 s"


TIES_A_CHILD = """\
import subprocess, sys, time
from orchestra.processes import tied
child = subprocess.Popen(tied(["sleep", "600"]), start_new_session=True)
print(child.pid, flush=True)
time.sleep(600)
"""


async def test_a_tied_child_dies_with_its_parent_whatever_kills_it() -> None:
    """PR_SET_PDEATHSIG through setpriv: SIGKILL of the parent, its own session notwithstanding."""
    assert processes.tied(["true"])[-1:] == ["true"]
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", TIES_A_CHILD, stdout=asyncio.subprocess.PIPE
    )
    child = int(await read_line(parent))
    assert alive(child)
    parent.kill()
    await parent.wait()
    await asyncio.wait_for(wait_gone([child]), LIMIT_S)
