"""What a launcher needs to run trees under the fork server: the server's command, and the
scripts bound into each sandbox (the client over the programs' console scripts, the holder as
its first process), made executable for this interpreter and the server's socket."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from orchestra.agents.forkserver.programs import ENTRY_POINTS
from orchestra.jsonio import write_text_atomic
from orchestra.paths import FORK_SERVER_SOCKET

STUB = Path(__file__).with_name("stub.py")
HOLDER = Path(__file__).with_name("holder.py")


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


def write_script(path: Path, text: str) -> Path:
    """`text` as the executable file `path` (rewritten only when it differs)."""
    try:
        current = path.read_text(encoding="utf-8")
    except OSError:
        current = None
    if current != text:
        write_text_atomic(path, text, mode=0o755)
    return path
