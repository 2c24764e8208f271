"""Running one command of an environment to completion under a deadline (both kinds)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from orchestra.processes import tied
from orchestra.trial.env.protocol import EnvCommandError, ExecResult

Abort = Callable[[asyncio.subprocess.Process], Awaitable[None]]


async def run_command_to_end(
    argv: Sequence[str],
    *,
    output: Path | None,
    timeout_seconds: float,
    abort: Abort,
    **spawn: Any,
) -> ExecResult:
    """Spawn `argv` (stdin closed, stdout and stderr merged into `output`, else captured) and
    wait for it, tied to this process (it dies with the orchestrator). On timeout or
    cancellation `abort` must kill it and whatever it started."""
    if not _runnable(argv[0], spawn):
        raise EnvCommandError(f"cannot run {argv[0]}: no such program")
    with contextlib.ExitStack() as files:
        sink = files.enter_context(output.open("wb")) if output else asyncio.subprocess.PIPE
        try:
            process = await asyncio.create_subprocess_exec(
                *tied(argv),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=sink,
                stderr=asyncio.subprocess.STDOUT,
                **spawn,
            )
        except OSError as error:
            raise EnvCommandError(f"cannot run {argv[0]}: {error}") from None
        try:
            async with asyncio.timeout(timeout_seconds):
                captured, _ = await process.communicate()
        except TimeoutError:
            await abort(process)
            return ExecResult(None, True)
        except BaseException:  # cancelled: leave nothing running
            await abort(process)
            raise
    text = captured.decode("utf-8", "replace") if captured else ""
    return ExecResult(process.returncode, False, text)


def _runnable(program: str, spawn: dict[str, Any]) -> bool:
    """Looked up before the spawn: through the tie, a missing program would only be setpriv's
    exit status."""
    if "/" in program and spawn.get("cwd") is not None:
        program = os.path.join(spawn["cwd"], program)
    return shutil.which(program, path=(spawn.get("env") or {}).get("PATH")) is not None
