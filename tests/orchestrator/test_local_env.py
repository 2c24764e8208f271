"""The local sandbox: fixture files, solution placement, escaped-process sweep (§5.8, §6, §7.2)."""

import os
import stat
import subprocess
import sys
from pathlib import Path

from orchestra.config.fixture import Fixture
from orchestra.paths import TaskPaths, TrialPaths
from orchestra.trial.agents import kill_sandbox_escapees
from orchestra.trial.local_env import create_sandbox, place_fixture_files, place_solution


def fixture() -> Fixture:
    return Fixture.model_validate(
        {
            "schema_version": 1,
            "home": "/home/buzz",
            "files": [
                {"path": "/home/buzz/.claude/skills/x/SKILL.md", "content": "id {{random_hex}}\n"},
                {"path": "/home/buzz/notes.txt", "content": "{{random_hex}}", "mode": "0600"},
            ],
        }
    )


def test_fixture_files_share_one_random_value_and_are_recorded(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "trial")
    env = create_sandbox(trial, fixture())
    assert Path(env.home) == trial.sandbox / "home" / "buzz"
    assert Path(env.workspace).is_dir() and Path(env.tmpdir).is_dir()
    value = place_fixture_files(trial, env, fixture())
    assert value is not None and len(value) == 32
    skill = trial.sandbox / "home/buzz/.claude/skills/x/SKILL.md"
    assert skill.read_text() == f"id {value}\n"
    assert (trial.sandbox / "home/buzz/notes.txt").read_text() == value
    assert stat.S_IMODE((trial.sandbox / "home/buzz/notes.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE(skill.parent.stat().st_mode) == 0o755
    assert trial.fixture_file_record("/home/buzz/notes.txt").read_text() == value


def test_solution_is_copied_executable(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "solution").mkdir(parents=True)
    (task / "solution" / "solve.sh").write_text("#!/bin/sh\n")
    trial = TrialPaths(tmp_path / "trial")
    env = create_sandbox(trial, Fixture.empty())
    solve = place_solution(TaskPaths(task), env)
    assert solve == trial.sandbox / "solution" / "solve.sh"
    assert os.access(solve, os.X_OK)


def test_sweep_kills_processes_whose_home_is_in_the_sandbox(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    (sandbox / "root").mkdir(parents=True)
    inside = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        env={**os.environ, "HOME": str(sandbox / "root")},
    )
    outside = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        killed = kill_sandbox_escapees(sandbox)
        assert killed == [inside.pid]
        assert inside.wait(10) == -9
        assert outside.poll() is None
    finally:
        outside.kill()
        outside.wait()
