"""The task `orchestra task new` writes is a directory of real files shipped as package data:
its verifier a Python file ruff lints, the wheel carries every file, the scaffold fills it in."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from orchestra.paths import TASK_TEMPLATE_DIR, TaskPaths
from orchestra.stack.wheelhouse import build_project_wheel
from orchestra.taskkit.scaffold import SOLUTION_PREAMBLE, scaffold, template_files

TEMPLATE_PACKAGE_DIR = "orchestra/taskkit/template/"


def test_the_scaffold_writes_the_template_filled_in(tmp_path: Path) -> None:
    task_dir = tmp_path / "suite" / "ready-task"
    written = scaffold(task_dir, "workflow")
    template = template_files()
    assert sorted(path.relative_to(task_dir) for path in written) == sorted(
        set(template) - {SOLUTION_PREAMBLE}
    )
    verifier = (TASK_TEMPLATE_DIR / "tests" / "verify.py").read_text(encoding="utf-8")
    filled = verifier.replace("__DIR__", "ready-task").replace("__NAME__", "suite/ready-task")
    paths = TaskPaths(task_dir)
    assert paths.tests_dir.joinpath("verify.py").read_text(encoding="utf-8") == filled
    assert 'TASK_NAME = "ready-task"' in filled and "__" + "NAME__" not in filled
    solve = paths.solve_sh.read_text(encoding="utf-8")
    assert solve.startswith("#!/usr/bin/env bash\n# Reference solution for suite/ready-task;")
    assert solve.endswith(template[Path("solution") / "solve.sh"])
    assert all(os.access(path, os.X_OK) for path in written if path.suffix in (".sh", ".py"))
    assert 'evaluation_layer = "workflow"' in paths.task_toml.read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_wheel_carries_the_template(tmp_path: Path) -> None:
    wheel = build_project_wheel(tmp_path / "wheel")
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist() if name.startswith(TEMPLATE_PACKAGE_DIR)]
        archive.extractall(unpacked, members)
    assert template_files(unpacked / TEMPLATE_PACKAGE_DIR) == template_files()
