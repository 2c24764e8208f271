"""What a launcher needs to run trees under the fork server: the server's command, and the
files bound into each sandbox (the client script over the programs' console scripts, the holder
as its first process), made executable for this interpreter and the server's socket."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestra.agents.forkserver.programs import ENTRY_POINTS
from orchestra.jsonio import write_text_atomic
from orchestra.paths import FORK_SERVER_SOCKET

STUB = Path(__file__).with_name("stub.py")
HOLDER = Path(__file__).with_name("holder.py")
HOLDER_SOURCE = Path(__file__).with_name("holder.c")
COMPILERS = ("cc",)
COMPILE_SECONDS = 60.0


def server_command(socket_path: Path, *, python: str | None = None) -> list[str]:
    return [
        python or sys.executable,
        "-m",
        "orchestra.agents.forkserver",
        "--socket",
        str(socket_path),
    ]


def _script(python: str, source: Path, call: str) -> str:
    """`source` as an executable script for `python` (`-S -I`: no site, no user environment,
    built-in modules only), ending in `call`."""
    return f"#!{python} -SI\n{source.read_text(encoding='utf-8')}\n\n{call}\n"


def stub_script(
    python: str,
    socket_path: str = str(FORK_SERVER_SOCKET),
    entry_points: Mapping[str, str] = ENTRY_POINTS,
) -> str:
    return _script(python, STUB, f"main({socket_path!r}, {python!r}, {dict(entry_points)!r})")


def holder_script(python: str) -> str:
    return _script(python, HOLDER, "main()")


def write_holder(path: Path, python: str, compilers: Sequence[str] = COMPILERS) -> Path:
    """The sandbox's first process at `path`: `holder.c` built by the first of `compilers` on
    PATH that builds it (~0.1 MiB of private memory per tree), else `holder.py` as a script
    for `python` (a bare interpreter: 2.7 MiB)."""
    built = path.with_name(f".{path.name}.build")
    for compiler in filter(None, map(shutil.which, compilers)):
        command = [compiler, "-O2", "-o", str(built), str(HOLDER_SOURCE)]
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(command, check=True, capture_output=True, timeout=COMPILE_SECONDS)
            built.chmod(0o755)
            os.replace(built, path)
            return path
    with contextlib.suppress(FileNotFoundError):
        built.unlink()
    return write_script(path, holder_script(python))


def write_script(path: Path, text: str) -> Path:
    """`text` as the executable file `path` (rewritten only when it differs)."""
    try:
        current = path.read_text(encoding="utf-8")
    except OSError:
        current = None
    if current != text:
        write_text_atomic(path, text, mode=0o755)
    return path
