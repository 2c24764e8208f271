"""Harbor-format tasks (docs/decisions.md D46): a task directory without buzz-fixture.toml is read
as Harbor's task.toml, gets the `harbor` layer (k = 5) unless its [metadata] names one, and every
problem is one line naming the file and the field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from harbor_support import HARBOR_TASKS

from orchestra.config.errors import ConfigError
from orchestra.config.harbor_task import harbor_checksum
from orchestra.config.task import load_task, task_digest
from orchestra.documents.run_config import TaskSelection
from orchestra.jobs.plan import make_plan

from .conftest import make_task


def harbor_task(root: Path, name: str, toml: str, *, dockerfile: bool = True) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    (task / "instruction.md").write_text("Make /app/x.\n", encoding="utf-8")
    (task / "tests" / "test.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    if dockerfile:
        (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim-bookworm\n")
    return task


def problems(task: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_task(task)
    lines = [str(error) for error in caught.value.errors]
    assert all("\n" not in line for line in lines)
    return lines


def test_a_harbor_task_takes_its_name_from_the_directory_and_the_harbor_layer() -> None:
    task = load_task(HARBOR_TASKS / "hello-file")
    assert task.is_harbor and task.fixture.requires_evidence is False
    assert (task.name, task.short_name, task.layer) == ("hello-file", "hello-file", "harbor")
    assert task.toml.agent.timeout_sec == 120.0 and task.toml.environment.memory_mb == 1024
    named = load_task(HARBOR_TASKS / "fix-python-bug")
    assert named.name == "harbor-fixtures/fix-python-bug"
    assert named.harbor is not None and named.harbor.verifier_env == {"EXPECTED_TOTAL": "15"}


def test_a_harbor_task_may_name_a_buzz_layer(tmp_path: Path) -> None:
    task = harbor_task(tmp_path, "t", '[metadata]\nevaluation_layer = "workflow"\n')
    assert load_task(task).layer == "workflow"


def test_without_k_harbor_tasks_are_a_job_of_their_own_with_k_5(tmp_path: Path) -> None:
    make_task(tmp_path, "buzz-task", "regression")
    harbor_task(tmp_path, "harbor-task", "")
    plan = make_plan(TaskSelection(paths=[tmp_path]), "base")
    assert [(job.name, job.layer, job.attempts) for job in plan.jobs] == [
        ("base-regression", "regression", 1),
        ("base-harbor", "harbor", 5),
    ]
    harbor_only = make_plan(TaskSelection(paths=[tmp_path], layer="harbor"), "base")
    assert [(job.name, job.attempts) for job in harbor_only.jobs] == [("base", 5)]


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            '[environment]\ndocker_image = "ubuntu:24.04"\n',
            "task.toml: [environment].docker_image: unknown key",
        ),
        (
            '[agent]\ntimeout_sec = "ten"\n',
            'task.toml: [agent].timeout_sec: input should be a valid number (got "ten")',
        ),
        (
            '[environment]\nworkdir = "app"\n',
            'task.toml: [environment].workdir: must be an absolute path (got "app")',
        ),
        (
            '[metadata]\nevaluation_layer = "nightly"\n',
            'task.toml: [metadata].evaluation_layer must be one of "regression", "workflow", '
            '"harbor" (got "nightly")',
        ),
        (
            "[verifier]\nenv = { A = 1 }\n",
            "task.toml: [verifier].env.A: input should be a valid string",
        ),
        ("[environment\n", "task.toml: invalid TOML"),
    ],
    ids=["unknown-key", "wrong-type", "relative-workdir", "bad-layer", "env-value", "syntax"],
)
def test_a_malformed_harbor_task_is_one_line_naming_file_and_field(
    tmp_path: Path, toml: str, expected: str
) -> None:
    task = harbor_task(tmp_path, "t", toml)
    (line,) = problems(task)
    assert line.startswith(f"{task}/{expected}"), line


def test_missing_harbor_files_are_named_together(tmp_path: Path) -> None:
    task = harbor_task(tmp_path, "t", "", dockerfile=False)
    (task / "instruction.md").unlink()
    assert problems(task) == [
        f"{task}/instruction.md: missing (every Harbor task needs this file)",
        f"{task}/environment/Dockerfile: missing (every Harbor task needs this file)",
    ]


def test_harbor_checksum_is_dirhash_of_the_task_directory(tmp_path: Path) -> None:
    """Harbor 0.25's `Task.checksum` (dirhash sha256 over names and contents, empty
    directories and `.harborignore` left out), pinned on a tree computed by dirhash 0.5."""
    task = tmp_path / "t"
    (task / "tests").mkdir(parents=True)
    (task / "empty").mkdir()
    (task / "instruction.md").write_text("hi\n")
    (task / "tests" / "test.sh").write_text("#!/bin/sh\n")
    (task / "tests" / ".harborignore").write_text("x\n")
    assert harbor_checksum(task) == DIRHASH_OF_T


#: `dirhash.dirhash(t, "sha256", ignore=[".harborignore"])` with dirhash 0.5.0 on that tree
DIRHASH_OF_T = "af60747c95ad3406f5f5ed5dc82d65309a1664024147fb8dbb789377b35e98c4"


def test_the_fixture_tasks_share_one_environment() -> None:
    """So the docker env builds one image and one agent layer for all of them (README)."""
    digests = {
        task_digest(task / "environment") for task in HARBOR_TASKS.iterdir() if task.is_dir()
    }
    assert len(digests) == 1


def test_a_harbor_instruction_is_posted_without_its_canary_lines(tmp_path: Path) -> None:
    task = harbor_task(tmp_path, "t", "")
    (task / "instruction.md").write_text(
        "<!-- BENCHMARK DATA canary GUID 1234 -->\n# harbor-canary 1234\n\nMake /app/x.\n\n"
    )
    assert load_task(task).instruction() == "Make /app/x."
    buzz = make_task(tmp_path, "buzz")
    (buzz / "instruction.md").write_text("# canary kept\nDo it.\n")
    assert load_task(buzz).instruction() == "# canary kept\nDo it."
