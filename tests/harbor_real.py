"""The real `harbor` package, for checking what `orchestra export harbor` writes (docs/decisions.md
D76): Harbor needs Python >= 3.12, so it lives in a venv of its own, made once per pinned version
under ~/.cache/buzz-orchestra/harbor-venv/<version> (a lock keeps concurrent sessions from building
it twice) and reused by every later session.

`real_harbor()` is the venv (or a skip naming why there is none); `check_harbor_jobs(jobs_dir)`
runs tests/harbor_check.py in it and returns what Harbor made of each file."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestra.paths import PROJECT_ROOT

HARBOR_VERSION = "0.26.0"
CACHE_ROOT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "buzz-orchestra"
CHECK_SCRIPT = PROJECT_ROOT / "tests" / "harbor_check.py"
INSTALL_TIMEOUT_SECONDS = 900


def python_312() -> Path | None:
    """A Python >= 3.12 interpreter that runs: this one, pyenv's (3.12 first), or one on PATH
    (pyenv's shims are on PATH for versions that are not active, hence the trial run)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [
        Path(sys.executable),
        *sorted(pyenv.glob("3.1[2-9]*/bin/python")),
        *(Path(found) for name in ("python3.12", "python3.13") if (found := shutil.which(name))),
    ]
    for candidate in candidates:
        check = [str(candidate), "-c", "import sys; sys.exit(sys.version_info < (3, 12))"]
        if candidate.is_file() and subprocess.run(check, capture_output=True).returncode == 0:
            return candidate
    return None


@functools.cache
def harbor_python() -> Path | str:
    """The venv's python with harbor installed, or why there is none."""
    base = python_312()
    if base is None:
        return "no Python >= 3.12 interpreter (PATH, pyenv) for the harbor package"
    venv = CACHE_ROOT / "harbor-venv" / HARBOR_VERSION
    python = venv / "bin" / "python"
    ready = venv / ".installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / f"{HARBOR_VERSION}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.is_file():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", f"harbor=={HARBOR_VERSION}"],
                check=True,
                timeout=INSTALL_TIMEOUT_SECONDS,
            )
            ready.write_text(HARBOR_VERSION)
    return python


def real_harbor() -> Path:
    python = harbor_python()
    if isinstance(python, str):
        pytest.skip(python)
    return python


def check_harbor_jobs(jobs_dir: Path, *, task_checksums: bool = True) -> dict[str, Any]:
    """What Harbor makes of every job and trial in `jobs_dir` (see tests/harbor_check.py);
    fails the test on any problem Harbor reports. `task_checksums=False` for a recorded run,
    whose task directories may have changed since."""
    flags = ["--task-checksums"] if task_checksums else []
    completed = subprocess.run(
        [str(real_harbor()), str(CHECK_SCRIPT), str(jobs_dir), *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    report: dict[str, Any] = json.loads(completed.stdout)
    assert report["harbor_version"] == HARBOR_VERSION
    assert report["problems"] == [], "\n".join(report["problems"])
    return report
