"""Runs a buzz-native verifier the way test.sh does: `python3 tests/verify.py` in a subprocess."""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TASKS_ROOT = Path(__file__).resolve().parents[2] / "tasks" / "buzz-native"
SKILL_TASK = "read-named-path-outside-workspace"
CHECK_ID = "chc-unit-test-42"
ACTION = "Recommend compaction when remaining context is low."
SKILL_TEXT = f"# Fixture\nCHECK_ID: {CHECK_ID}\nACTION: {ACTION}\n"


def verifier_path(task: str) -> Path:
    return TASKS_ROOT / task / "tests" / "verify.py"


@functools.cache
def load_verifier(task: str) -> ModuleType:
    """Imports a task's verify.py by file path (it is not part of any package)."""
    spec = importlib.util.spec_from_file_location(
        f"verify_{task.replace('-', '_')}", verifier_path(task)
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class VerifierRun:
    returncode: int
    metrics: dict[str, float]
    details: dict[str, Any]
    reward_text: str
    details_text: str
    stderr: str


def run_verifier(
    task: str,
    workdir: Path,
    evidence: Any = None,
    *,
    raw: bytes | None = None,
    skill_text: str | None = SKILL_TEXT,
) -> VerifierRun:
    """Writes the evidence (JSON of `evidence`, or `raw` bytes, or nothing when both are None)
    and runs the verifier with the contract's arguments; outputs go to a not-yet-existing dir."""
    evidence_path = workdir / "artifacts" / "buzz-evidence.json"
    evidence_path.parent.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        evidence_path.write_bytes(raw)
    elif evidence is not None:
        evidence_path.write_text(json.dumps(evidence), encoding="utf-8")
    out = workdir / "verifier"
    command = [sys.executable, str(verifier_path(task)), "--evidence", str(evidence_path)]
    if task == SKILL_TASK:
        skill = workdir / "home" / "SKILL.md"
        if skill_text is not None:
            skill.parent.mkdir(parents=True, exist_ok=True)
            skill.write_text(skill_text, encoding="utf-8")
        command += ["--skill-file", str(skill)]
    command += ["--reward", str(out / "reward.json"), "--details", str(out / "details.json")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    reward_text = (out / "reward.json").read_text(encoding="utf-8")
    details_text = (out / "details.json").read_text(encoding="utf-8")
    return VerifierRun(
        done.returncode,
        json.loads(reward_text),
        json.loads(details_text),
        reward_text,
        details_text,
        done.stderr,
    )


def score_in_process(task: str, evidence: Any) -> tuple[dict[str, float], dict[str, Any]]:
    """`score_evidence` called directly (the skill task with the unit-test expectations)."""
    module = load_verifier(task)
    if task == SKILL_TASK:
        return module.score_evidence(evidence, expected_check_id=CHECK_ID, expected_action=ACTION)
    return module.score_evidence(evidence)


def assert_scores(
    task: str, workdir: Path, evidence: Any, expected: dict[str, float]
) -> VerifierRun:
    """Runs the verifier and checks the listed metrics (and that the run itself was clean)."""
    result = run_verifier(task, workdir, evidence)
    assert result.returncode == 0, result.stderr
    assert "error" not in result.details, result.details
    actual = {name: result.metrics.get(name) for name in expected}
    assert actual == expected, result.details
    return result


def adversarial_test(task: str, cases: dict[str, tuple[Any, dict[str, float]]]):
    """A test over a task's table of adversarial cases: name -> (evidence builder, expected
    metrics); assign it to a module-level `test_...` name so pytest collects it."""

    @pytest.mark.parametrize("case", cases)
    def test_adversarial_case(case: str, tmp_path: Path) -> None:
        build, expected = cases[case]
        assert_scores(task, tmp_path, build(), expected)

    return test_adversarial_case
