"""Running a task's verifier on the host for the local env (orchestrator.md §9.3)."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from orchestra.files import empty_directory
from orchestra.paths import TrialPaths
from orchestra.processes import kill_group
from orchestra.verify.outcome import NETWORK_NOT_ISOLATED, VerifierRun, conclude_verifier_run
from orchestra.verify.reward import remove_stale_rewards


def map_container_paths(script: str, mapping: Mapping[str, Path]) -> str:
    """Replace container prefixes followed by `/`, a quote, whitespace or end of line.

    One regex pass, longest prefix first, so a host path that itself contains a container
    prefix (e.g. `<trial>/tests`) is never mapped twice.
    """
    prefixes = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(
        "(" + "|".join(re.escape(p) for p in prefixes) + r")(?=[/'\"\s]|$)", re.MULTILINE
    )
    return pattern.sub(lambda match: str(mapping[match.group(1)]), script)


def shebang_command(script: str) -> list[str]:
    first = script.splitlines()[0] if script else ""
    if first.startswith("#!"):
        parts = shlex.split(first[2:].strip())
        if parts:
            return parts
    return ["/bin/sh"]


class _PythonShim:
    """A directory whose `python3` runs the orchestrator's own interpreter."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="orchestra-verifier-bin-")
        self.path = Path(self._tmp.name)
        shim = self.path / "python3"
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        shim.chmod(0o755)

    def close(self) -> None:
        self._tmp.cleanup()


async def run_local_verifier(
    paths: TrialPaths, home: str | None, task_tests_dir: Path, timeout_seconds: float
) -> VerifierRun:
    """Copy the tests, run the mapped test.sh, read the rewards (`conclude_verifier_run`)."""
    empty_directory(paths.verifier_dir)
    if paths.tests_dir.exists():
        shutil.rmtree(paths.tests_dir)
    shutil.copytree(task_tests_dir, paths.tests_dir)
    remove_stale_rewards(paths.verifier_dir)
    script = (paths.tests_dir / "test.sh").read_text(encoding="utf-8")
    local_script = paths.test_local_sh
    local_script.write_text(
        map_container_paths(script, dict(paths.verifier_path_map(home))), encoding="utf-8"
    )
    local_script.chmod(0o755)
    shim = _PythonShim()
    try:
        exit_code, timed_out = await _run_script(
            [*shebang_command(script), str(local_script)],
            cwd=paths.root,
            env={
                "PATH": f"{shim.path}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
                "LANG": "C.UTF-8",
            },
            output=paths.test_stdout,
            timeout_seconds=timeout_seconds,
        )
    finally:
        shim.close()
    return conclude_verifier_run(
        paths.verifier_dir,
        exit_code=exit_code,
        timed_out=timed_out,
        timeout_seconds=timeout_seconds,
        network=NETWORK_NOT_ISOLATED,
    )


async def _run_script(
    command: list[str], *, cwd: Path, env: dict[str, str], output: Path, timeout_seconds: float
) -> tuple[int | None, bool]:
    with output.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=sink,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return await asyncio.wait_for(process.wait(), timeout_seconds), False
        except TimeoutError:
            await kill_group(process)
            return process.returncode, True
        except BaseException:
            await kill_group(process)
            raise
