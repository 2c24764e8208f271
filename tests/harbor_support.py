"""The Harbor-format fixture tasks (tests/fixtures/harbor-tasks) and what an oracle
run of each must score, in either environment: the reference solutions 1.0, the deliberately
wrong one 0.0, and fix-python-bug's diagnostics of the harness's guarantees (the agents' shell
had no /tests and worked in /app; the verifier had no network) 1.0."""

import shutil
from pathlib import Path
from typing import Any

from orchestra.paths import PROJECT_ROOT

HARBOR_TASKS = PROJECT_ROOT / "tests" / "fixtures" / "harbor-tasks"
EXPECTED_REWARDS = {
    "hello-file": {"reward": 1.0},
    "fix-python-bug": {"reward": 1.0, "agents_saw_no_tests": 1.0, "verifier_offline": 1.0},
    "wrong-sum": {"reward": 0.0},
}


def harbor_dataset(dest: Path) -> Path:
    """A private copy of the fixture tasks (a run must not depend on the checkout's state)."""
    shutil.copytree(HARBOR_TASKS, dest, ignore=shutil.ignore_patterns("__pycache__", "README.md"))
    return dest


def harbor_problems(results: dict[str, dict[str, Any]]) -> list[str]:
    """What differs from the expected outcome, per task (empty: all as expected)."""
    problems = []
    if sorted(results) != sorted(EXPECTED_REWARDS):
        problems.append(f"trials of {sorted(results)}, expected {sorted(EXPECTED_REWARDS)}")
    for name, result in results.items():
        got = (result["status"], result["rewards"], result["verifier"]["network"])
        if got != ("scored", EXPECTED_REWARDS.get(name), "none"):
            problems.append(f"{name}: {got} ({result.get('exception_info')})")
    return problems
