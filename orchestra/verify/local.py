"""Running a task's verifier on the host for the local env (orchestrator.md §9.3).

The verifier's world is `<trial>/verifier-inputs/`, written from the harness's copies after every
agent process is dead; the mapped `test.sh` points every input path there. Its environment is
rebuilt from nothing: `PATH` is a directory whose `python3` runs the orchestrator's interpreter
in isolated mode without `site` (`-I -S`: no `PYTHON*` variables, no user or venv site
directories, no `sitecustomize`/`usercustomize`/`.pth` hooks, not even the script's own
directory on `sys.path`), then the system's standard utilities path; `HOME` is an empty
directory; `LANG=C.UTF-8`; nothing else. What this cannot prevent, agents running as the same
OS user, is in the README.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from orchestra.config.manifest import ArtifactHashMismatch
from orchestra.paths import CONTAINER_TEST_SH, TrialPaths
from orchestra.processes import kill_group, tied
from orchestra.verify.inputs import VerifierInputs, clear_verifier_dirs
from orchestra.verify.outcome import NETWORK_NOT_ISOLATED, VerifierRun, conclude_verifier_run

VERIFIER_LANG = "C.UTF-8"
#: The interpreter flags of the local verifier's `python3` (see the module docstring).
PYTHON_FLAGS = ("-I", "-S")


def map_container_paths(script: str, mapping: Mapping[str, Path]) -> str:
    """Replace container prefixes followed by `/`, a quote, whitespace or end of line.

    One regex pass, longest prefix first, so a host path that itself contains a container
    prefix (e.g. `<trial>/verifier-inputs/tests`) is never mapped twice.
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


def system_path() -> str:
    """The system's standard utilities path (`getconf PATH`), never the invoking user's."""
    try:
        return os.confstr("CS_PATH") or os.defpath
    except (ValueError, OSError):
        return os.defpath


@contextmanager
def verifier_scratch() -> Iterator[dict[str, str]]:
    """A private temporary directory with `bin/python3` (the orchestrator's interpreter with
    `PYTHON_FLAGS`) and an empty `home/`; yields the verifier's whole environment."""
    with tempfile.TemporaryDirectory(prefix="orchestra-verifier-") as scratch:
        bin_dir, home = Path(scratch, "bin"), Path(scratch, "home")
        bin_dir.mkdir()
        home.mkdir()
        shim = bin_dir / "python3"
        flags = " ".join(PYTHON_FLAGS)
        # a symlink would lose the virtual environment's interpreter path
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {flags} "$@"\n')
        shim.chmod(0o755)
        yield {
            "PATH": f"{bin_dir}{os.pathsep}{system_path()}",
            "HOME": str(home),
            "LANG": VERIFIER_LANG,
        }


async def run_local_verifier(
    paths: TrialPaths,
    home: str | None,
    inputs: VerifierInputs,
    timeout_seconds: float,
    log: Callable[[str], None],
) -> VerifierRun:
    """§9.3 steps 1-3 over `inputs`, then the rewards (`conclude_verifier_run`).

    Raises `ArtifactHashMismatch` when an input changed while the verifier ran (only a
    process outside the orchestrator's control can do that: the verdict is not trusted)."""
    clear_verifier_dirs(paths.verifier_dir, paths.verifier_inputs_dir, log=log)
    inputs.write_tree(paths.verifier_inputs_dir)
    test_sh = inputs.file(CONTAINER_TEST_SH)
    script = test_sh.content.decode("utf-8") if test_sh is not None else ""
    local_script = paths.test_local_sh
    local_script.write_text(
        map_container_paths(script, dict(paths.verifier_path_map(home))), encoding="utf-8"
    )
    local_script.chmod(0o755)
    with verifier_scratch() as env:
        exit_code, timed_out = await _run_script(
            [*shebang_command(script), str(local_script)],
            cwd=paths.root,
            env=env,
            output=paths.test_stdout,
            timeout_seconds=timeout_seconds,
        )
    changed = inputs.changed_in(paths.verifier_inputs_dir)
    if changed:
        raise ArtifactHashMismatch(
            f"verifier inputs changed while the verifier ran: {', '.join(changed)} "
            "(a process of the same OS user wrote them; the local env cannot prevent that)"
        )
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
            *tied(command),  # dies with the orchestrator, whatever kills it
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=sink,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(timeout_seconds):
                return await process.wait(), False
        except TimeoutError:
            await kill_group(process)
            return process.returncode, True
        except BaseException:
            await kill_group(process)
            raise
