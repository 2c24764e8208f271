"""Running one command of an environment to completion under a deadline (both kinds)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

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
    wait for it. On timeout or cancellation `abort` must kill it and whatever it started."""
    with contextlib.ExitStack() as files:
        sink = files.enter_context(output.open("wb")) if output else asyncio.subprocess.PIPE
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=sink,
                stderr=asyncio.subprocess.STDOUT,
                **spawn,
            )
        except OSError as error:
            raise EnvCommandError(f"cannot run {argv[0]}: {error}") from None
        try:
            captured, _ = await asyncio.wait_for(process.communicate(), timeout_seconds)
        except TimeoutError:
            await abort(process)
            return ExecResult(None, True)
        except BaseException:  # cancelled: leave nothing running
            await abort(process)
            raise
    text = captured.decode("utf-8", "replace") if captured else ""
    return ExecResult(process.returncode, False, text)
