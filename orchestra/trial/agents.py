"""Local-env agent processes: launch, exit watching and stopping (§7.2 steps 9, 16; §7.7)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterable
from pathlib import Path

STOP_GRACE_SECONDS = 5.0


class AgentLaunchError(Exception):
    pass


class LocalAgent:
    """One `buzz-acp` started in its own session, stdout/stderr streamed to host files."""

    def __init__(self, agent_id: str, on_exit: Callable[[LocalAgent], None]) -> None:
        self.agent_id = agent_id
        self._on_exit = on_exit
        self.process: asyncio.subprocess.Process | None = None
        self.exit_code: int | None = None
        self.stopping = False
        self._watch: asyncio.Task[None] | None = None

    async def start(
        self, program: Path, env: dict[str, str], cwd: Path, stdout: Path, stderr: Path
    ) -> None:
        try:
            with stdout.open("ab") as out, stderr.open("ab") as err:
                self.process = await asyncio.create_subprocess_exec(
                    str(program),
                    cwd=cwd,
                    env=env,
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
        self._on_exit(self)

    @property
    def running(self) -> bool:
        return self.process is not None and self.exit_code is None

    async def stop(self) -> None:
        """SIGTERM to the process group, up to 5 s, then SIGKILL."""
        if self.process is None:
            return
        self.stopping = True
        pgid = self.process.pid
        _signal_group(pgid, signal.SIGTERM)
        if self._watch is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._watch), STOP_GRACE_SECONDS)
            except TimeoutError:
                pass
        # the group may hold children that outlived the leader: KILL whatever is left
        _signal_group(pgid, signal.SIGKILL)
        if self._watch is not None:
            await self._watch


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _environment_of(pid: str) -> dict[bytes, bytes]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def kill_sandbox_escapees(sandbox: Path, *, exclude: Iterable[int] = ()) -> list[int]:
    """SIGKILL every process whose HOME or TMPDIR lies inside `sandbox` (Linux /proc)."""
    root = os.fsencode(str(sandbox.resolve()))
    skip = {os.getpid(), *exclude}
    killed: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return killed
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        env = _environment_of(entry.name)
        for key in (b"HOME", b"TMPDIR"):
            value = env.get(key)
            if value is not None and (value == root or value.startswith(root + b"/")):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed.append(int(entry.name))
                break
    return killed
