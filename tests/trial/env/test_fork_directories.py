"""The fork server's directory outlives an orchestrator killed by SIGKILL (its `atexit` never
runs); the next orchestrator's fork server removes it, and only such directories."""

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from orchestra.paths import ForkServerPaths
from orchestra.trial.env.forked import DIRECTORY_PREFIX, ForkServer, sweep_abandoned


def fork_directory(parent: Path, name: str, owner: str | None) -> Path:
    root = parent / f"{DIRECTORY_PREFIX}{name}"
    root.mkdir()
    (root / "socket").touch()
    if owner is not None:
        ForkServerPaths(root).owner.write_text(owner)
    return root


def a_dead_process_mark() -> str:
    child = psutil.Popen([sys.executable, "-c", "pass"])
    mark = f"{child.pid} {child.create_time()!r}"
    child.wait()
    return mark


def test_only_the_directories_of_dead_orchestrators_are_removed(tmp_path: Path) -> None:
    me = psutil.Process()
    dead = fork_directory(tmp_path, "dead", a_dead_process_mark())
    # the same pid, started at another time: a reused pid is not the owner
    reused = fork_directory(tmp_path, "reused", f"{me.pid} {me.create_time() - 100.0!r}")
    alive = fork_directory(tmp_path, "alive", f"{me.pid} {me.create_time()!r}")
    unowned = fork_directory(tmp_path, "unowned", None)
    garbled = fork_directory(tmp_path, "garbled", "not a pid")
    other = tmp_path / "someone-else"
    other.mkdir()

    sweep_abandoned(tmp_path)

    assert not dead.exists() and not reused.exists()
    assert alive.exists() and unowned.exists() and garbled.exists() and other.exists()


def test_an_orchestrator_killed_by_sigkill_leaves_a_directory_the_next_one_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    made = subprocess.run(
        [sys.executable, "-c", (
            "import os, signal\n"
            "from orchestra.trial.env.forked import ForkServer\n"
            "print(ForkServer().paths.root, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n"
        )],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    left = Path(made.stdout.strip())
    assert made.returncode == -9 and left.is_dir() and left.parent == tmp_path, made.stderr

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    server = ForkServer()
    try:
        assert not left.exists()
        assert server.paths.root.is_dir() and server.paths.root.parent == tmp_path
    finally:
        server.close()
