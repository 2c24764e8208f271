"""Local-env agent processes: launch, exit watching, stopping and the escaped-process sweep
(orchestrator.md §7.2 steps 9 and 16, §7.7)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from orchestra.trial.env.waits import first_of

STOP_GRACE_SECONDS = 5.0


class AgentLaunchError(Exception):
    pass


class LocalAgentProcess:
    """One `buzz-acp` started in its own session, stdout/stderr streamed to host files."""

    def __init__(self, agent_id: str, on_exit: Callable[[], None]) -> None:
        self.agent_id = agent_id
        self._on_exit = on_exit
        self.process: asyncio.subprocess.Process | None = None
        self.exit_code: int | None = None
        self.stopping = False
        self._watch: asyncio.Task[None] | None = None

    async def start(
        self, program: Path, env: Mapping[str, str], cwd: Path, stdout: Path, stderr: Path
    ) -> None:
        try:
            with stdout.open("ab") as out, stderr.open("ab") as err:
                self.process = await asyncio.create_subprocess_exec(
                    str(program),
                    cwd=cwd,
                    env=dict(env),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
        except OSError as error:
            raise AgentLaunchError(f"{self.agent_id}: cannot start {program}: {error}") from None
        self._watch = asyncio.create_task(self._wait(), name=f"agent-exit-{self.agent_id}")

    async def _wait(self) -> None:
        assert self.process is not None
        self.exit_code = await self.process.wait()
        self._on_exit()

    @property
    def running(self) -> bool:
        return self.process is not None and self.exit_code is None

    async def stop(self, hurry: asyncio.Event | None = None) -> None:
        """SIGTERM to the process group, up to 5 s (or until `hurry` is set), then SIGKILL."""
        if self.process is None:
            return
        self.stopping = True
        pgid = self.process.pid
        signal_group(pgid, signal.SIGTERM)
        if self._watch is not None:
            await first_of(asyncio.shield(self._watch), hurry, STOP_GRACE_SECONDS)
        # the group may hold children that outlived the leader: KILL whatever is left
        signal_group(pgid, signal.SIGKILL)
        if self._watch is not None:
            await self._watch


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _environment_of(pid: int, mentioning: bytes) -> dict[bytes, bytes]:
    """The process's environment, or {} when no value contains `mentioning` (most of them)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:
        return {}
    if mentioning not in raw:
        return {}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def last_allocated_pid() -> int | None:
    """The pid the kernel handed out most recently (last field of /proc/loadavg)."""
    try:
        return int(Path("/proc/loadavg").read_text(encoding="ascii").split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def kill_sandbox_escapees(
    sandbox: Path, *, exclude: Iterable[int] = (), newer_than: int | None = None
) -> list[int]:
    """SIGKILL every process whose HOME or TMPDIR lies inside `sandbox` (Linux /proc).

    `newer_than`: `last_allocated_pid()` taken before the sandbox's first process started.
    Pids are handed out in increasing order, so only younger ones are read, which spares
    reading the environment of every process on a busy machine at each trial's end; when pids
    have wrapped around since, every process is read.
    """
    root = os.fsencode(str(sandbox.resolve()))
    skip = {os.getpid(), *exclude}
    killed: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:  # no procfs: nothing can be found this way
        return killed
    last = last_allocated_pid()
    floor = newer_than if newer_than is not None and last is not None and last >= newer_than else 0
    for pid in (int(name) for name in names if name.isdigit()):
        if pid <= floor or pid in skip:
            continue
        env = _environment_of(pid, root)
        for key in (b"HOME", b"TMPDIR"):
            value = env.get(key)
            if value is not None and (value == root or value.startswith(root + b"/")):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                break
    return killed
