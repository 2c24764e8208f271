"""The `shell` tool: one `bash -c` per call in its own process group (§3.2)."""

from __future__ import annotations

import asyncio
import contextlib
import time

from orchestra.agents.devmcp.workspace import Workspace
from orchestra.processes import stop_group

DEFAULT_TIMEOUT_SECS = 120
MAX_TIMEOUT_SECS = 600
TAIL_BYTES = 8192
ARTIFACT_CAP_BYTES = 10 * 1024 * 1024
_KILL_GRACE_SECS = 2.0
# After bash exits, a background child may still hold the pipe open; stop reading after this.
_DRAIN_AFTER_EXIT_SECS = 1.0
_READ_CHUNK = 65536
# Group kills of cancelled calls still running; server shutdown waits for them (see
# `finish_pending_kills`), otherwise closing the event loop would cut the KILL step short.
_pending_kills: set[asyncio.Task[None]] = set()


class ShellOutcome:
    """What the model sees: tail of the merged output plus a status line."""

    def __init__(self, text: str, is_error: bool) -> None:
        self.text = text
        self.is_error = is_error


class _OutputCollector:
    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = ARTIFACT_CAP_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
        self.tail += chunk
        if len(self.tail) > TAIL_BYTES:
            del self.tail[: len(self.tail) - TAIL_BYTES]


def clamp_timeout(timeout_secs: int | None) -> int:
    if timeout_secs is None:
        return DEFAULT_TIMEOUT_SECS
    return max(1, min(MAX_TIMEOUT_SECS, int(timeout_secs)))


async def _pump(stream: asyncio.StreamReader, output: _OutputCollector) -> None:
    while chunk := await stream.read(_READ_CHUNK):
        output.add(chunk)


def _exit_status(returncode: int) -> int:
    # Report signals the way a shell would (128 + signal number).
    return returncode if returncode >= 0 else 128 - returncode


def _render(output: _OutputCollector, workspace: Workspace, status_line: str) -> str:
    parts: list[str] = []
    if output.total > TAIL_BYTES:
        artifact = workspace.next_artifact_path()
        artifact.write_bytes(bytes(output.head))
        parts.append(
            f"[output truncated: showing the last {TAIL_BYTES} of {output.total} bytes; "
            f"full output: {artifact}]\n"
        )
    tail = output.tail.decode("utf-8", errors="replace")
    if tail:
        parts.append(tail if tail.endswith("\n") else tail + "\n")
    parts.append(status_line)
    return "".join(parts)


async def run_shell(command: str, timeout_secs: int | None, workspace: Workspace) -> ShellOutcome:
    timeout = clamp_timeout(timeout_secs)
    try:
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=workspace.cwd,
            env=workspace.shell_env,
            start_new_session=True,
        )
    except OSError as exc:
        return ShellOutcome(f"could not start bash: {exc}", is_error=True)
    assert process.stdout is not None
    output = _OutputCollector()
    pump = asyncio.create_task(_pump(process.stdout, output))
    deadline = time.monotonic() + timeout
    try:
        try:
            async with asyncio.timeout(timeout):
                await process.wait()
        except TimeoutError:
            await stop_group(process, grace=_KILL_GRACE_SECS)
            await _finish_pump(pump, deadline=time.monotonic() + _DRAIN_AFTER_EXIT_SECS)
            return ShellOutcome(
                _render(output, workspace, f"[timed out after {timeout} s]"), is_error=True
            )
        await _finish_pump(pump, deadline=min(deadline, time.monotonic() + _DRAIN_AFTER_EXIT_SECS))
    except asyncio.CancelledError:
        # The client cancelled the call: nothing of the command may survive it.
        kill = asyncio.ensure_future(stop_group(process, grace=_KILL_GRACE_SECS))
        _pending_kills.add(kill)
        kill.add_done_callback(_pending_kills.discard)
        pump.cancel()
        await asyncio.shield(kill)
        raise
    status = f"[exit code: {_exit_status(process.returncode or 0)}]"
    return ShellOutcome(_render(output, workspace, status), is_error=False)


async def finish_pending_kills() -> None:
    """Wait until every cancelled call's process group has been TERMed and, if needed, KILLed."""
    while _pending_kills:
        await asyncio.gather(*_pending_kills, return_exceptions=True)


async def _finish_pump(pump: asyncio.Task[None], deadline: float) -> None:
    try:
        async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
            await asyncio.shield(pump)
    except TimeoutError:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
