"""What the agent programs need to run inside the local env's sandbox (orchestrator.md §5.8):
the trees bound read-only into it, for this package's console scripts or a `--buzz-bin-dir`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

INTERPRETER_SECONDS = 10.0


def own_program_trees() -> list[Path]:
    """Where this package's console scripts run from: the virtual environment, the Python it
    was made from, and the package source (an editable install lives outside both)."""
    import orchestra

    trees = [Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent]
    trees += [Path(path) for path in orchestra.__path__]
    return trees


def program_trees(programs_dir: Path, *, own: bool, agent_path: str) -> list[Path]:
    """Everything the agent programs in `programs_dir` need to run, read-only.

    This package's scripts: `own_program_trees`. A `--buzz-bin-dir`: the directory, where its
    links point, and each script's interpreter, a Python asked where it imports from.
    """
    trees = [programs_dir]
    if own:
        return trees + own_program_trees()
    for program in sorted(programs_dir.iterdir()):
        real = Path(os.path.realpath(program))
        trees.append(real.parent)
        interpreter = _interpreter(real, agent_path)
        if interpreter is not None:
            trees += _interpreter_trees(str(interpreter))
    return trees


def _interpreter(script: Path, agent_path: str) -> Path | None:
    """The absolute interpreter of a `#!` line (`env NAME` looked up on the agents' PATH)."""
    try:
        with script.open("rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        names = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
        found = shutil.which(names[0], path=agent_path) if names else None
        return Path(found) if found else None
    return Path(words[0])


_WHERE_PYTHON_IMPORTS_FROM = """\
import json, sys
paths = [sys.prefix, sys.base_prefix]
try:
    import orchestra
    paths += list(orchestra.__path__)
except ImportError:
    pass
print(json.dumps(paths))
"""


@cache
def _interpreter_trees(interpreter: str) -> tuple[Path, ...]:
    real = Path(os.path.realpath(interpreter))
    trees = [real.parent]
    if "python" in real.name:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired, ValueError):
            answer = subprocess.run(
                [interpreter, "-c", _WHERE_PYTHON_IMPORTS_FROM],
                capture_output=True,
                text=True,
                timeout=INTERPRETER_SECONDS,
                check=True,
            )
            trees += [Path(path) for path in json.loads(answer.stdout)]
    return tuple(trees)
