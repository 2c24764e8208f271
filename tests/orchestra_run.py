"""Helpers of the tests that run the real `orchestra` command against faults and adversarial
solutions (tests/trial/env/test_sandbox_escapes.py, tests/stack/test_stack_faults.py,
tests/cli/test_orchestrator_death.py).

* `orchestra_command(*args)`: the installed `orchestra` script, as `just benchmark` runs it.
* `task_copy(dest, name, solve=None)`: a private copy of a dataset task, its `solve.sh`
  replaced when given (other work on the dataset must not change the task under a test).
* `wait_until(check, seconds, what)`: poll a condition the test cannot be told about (a file
  another process writes); the interval is a polling interval, not a synchronisation.
* `pids_in_namespace(link, started_before)`: host pids of the processes in a PID namespace
  (`readlink /proc/<pid>/ns/pid`, e.g. `pid:[4026532179]`) started before a time (namespace
  numbers are reused once a namespace is gone).
* `processes_naming(*marks)`: processes that name a mark in their command line or environment.
* `leftovers(*dirs)`: those naming one of the directories, described (an agent tree's HOME and
  TMPDIR lie inside its trial's directory).
"""

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psutil

from orchestra.paths import PROJECT_ROOT

ORCHESTRA = Path(sys.executable).with_name("orchestra")
DATASET = PROJECT_ROOT / "tasks" / "buzz-native"
POLL_SECONDS = 0.05
T = TypeVar("T")


def orchestra_command(*args: str) -> list[str]:
    return [str(ORCHESTRA), *args]


def task_copy(dest: Path, name: str, solve: str | None = None) -> Path:
    task = dest / name
    shutil.copytree(DATASET / name, task, ignore=shutil.ignore_patterns("__pycache__"))
    if solve is not None:
        (task / "solution" / "solve.sh").write_text(solve, encoding="utf-8")
    return task


def wait_until(check: Callable[[], T | None], seconds: float, what: str) -> T:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:g} s: {what}")
        time.sleep(POLL_SECONDS)  # polling interval


def pids_in_namespace(link: str, started_before: float) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "ns" / "pid").readlink().as_posix() != link:
                    continue
                if psutil.Process(int(entry.name)).create_time() < started_before:
                    pids.append(int(entry.name))
            except (OSError, psutil.Error):
                continue
    return pids


def processes_naming(*marks: str) -> list[psutil.Process]:
    """Processes (this one aside) that name one of `marks` in their command line or
    environment."""
    encoded = [os.fsencode(mark) for mark in marks]
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        try:
            command = " ".join(process.info["cmdline"] or []).encode()
            environment = "\0".join(f"{k}={v}" for k, v in process.environ().items()).encode()
        except psutil.Error:
            continue
        if process.pid != os.getpid() and any(
            mark in command or mark in environment for mark in encoded
        ):
            found.append(process)
    return found


def leftovers(*directories: Path) -> list[str]:
    """Processes that name one of `directories` in their command line or environment."""
    return [
        f"{process.pid}: {' '.join(process.info['cmdline'] or [])[:120]!r}"
        for process in processes_naming(*(str(directory) for directory in directories))
    ]
