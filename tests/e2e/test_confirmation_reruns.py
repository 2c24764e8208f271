"""Confirmation reruns end to end (docs/statistics.md "Confirmation reruns"): against a baseline
where both tasks passed 30 of 30 attempts, a run where one task's solution is replaced by its
negative solution reruns that task alone, confirms the regression on those fresh attempts and
exits 3 naming it last; the same run with nothing changed exits 0 with no confirmation
attempt."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from documents_support import report_document
from e2e_jobs import DATASET, JOB_TIMEOUT_SECONDS, N_CONCURRENT, NEGATIVE_SOLUTIONS, ORCHESTRA

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FLIPPED, STEADY = "user-mention", "multiline-message"


def baseline_report(path: Path) -> Path:
    """Both tasks passed 30 of 30 attempts (a report.json as `orchestra report` writes it)."""
    report_document({f"buzz-native/{name}": (30, 30) for name in (FLIPPED, STEADY)}).write(path)
    return path


def tasks_copy(where: Path, *, negate: bool) -> Path:
    """The two tasks in a dataset directory named as the real one (task names match)."""
    dataset = where / "buzz-native"
    for name in (FLIPPED, STEADY):
        shutil.copytree(
            DATASET / name, dataset / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    if negate:
        shutil.copy(
            NEGATIVE_SOLUTIONS / f"{FLIPPED}.sh", dataset / FLIPPED / "solution" / "solve.sh"
        )
    return dataset


@dataclass(frozen=True)
class ConfirmedRun:
    returncode: int
    stdout: str
    output: str  # both streams and the exit, for assertion messages
    attempts: dict[str, list[int]]  # task directory name -> the attempts that ran

    @property
    def last_line(self) -> str:
        return self.stdout.strip().splitlines()[-1]


def confirmed_run(
    scratch: Path, name: str, relay_url: str, database_url: str, *, negate: bool
) -> ConfirmedRun:
    """`orchestra benchmark --confirm-against` the baseline; the attempts run per task."""
    baseline = baseline_report(scratch / f"{name}-baseline.json")
    args = [
        str(ORCHESTRA), "benchmark", "--path", str(tasks_copy(scratch / name, negate=negate)),
        "-k", "1", "--env", "local", "-n", str(N_CONCURRENT),
        "--jobs-dir", str(scratch / "jobs"), "--state-dir", str(scratch / "state" / name),
        "--job-name", name, "--stack", "external", "--relay-url", relay_url,
        "--database-url", database_url, "--confirm-against", str(baseline),
    ]  # fmt: skip
    process = subprocess.run(args, capture_output=True, text=True, timeout=JOB_TIMEOUT_SECONDS)
    attempts: dict[str, list[int]] = {}
    for path in sorted((scratch / "jobs" / name / name).glob("*/result.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        attempts.setdefault(result["short_name"], []).append(result["attempt"])
    output = f"exit {process.returncode}\n{process.stdout}\n{process.stderr}"
    ran = {task: sorted(numbers) for task, numbers in attempts.items()}
    return ConfirmedRun(process.returncode, process.stdout, output, ran)


def test_a_regression_is_confirmed_by_reruns_of_that_task_alone(
    scratch: Path, relay_url: str, embedded_pg
) -> None:
    run = confirmed_run(scratch, "negated", relay_url, embedded_pg.new_database_url(), negate=True)
    assert run.returncode == 3, run.output
    # the 4 confirmation attempts (--confirm-attempts' default) all run: 0 of 4 against 30 of 30
    assert run.attempts == {FLIPPED: [1, 2, 3, 4, 5], STEADY: [1]}, run.output
    assert f"buzz-native/{FLIPPED} #2 (confirmation)" in run.stdout
    assert run.last_line == (
        f"confirmed regression: buzz-native/{FLIPPED} (Holm over 1 confirmed task at α=0.02)"
    ), run.output


def test_nothing_changed_runs_no_confirmation_attempt(
    scratch: Path, relay_url: str, embedded_pg
) -> None:
    run = confirmed_run(scratch, "intact", relay_url, embedded_pg.new_database_url(), negate=False)
    assert run.returncode == 0, run.output
    assert run.attempts == {FLIPPED: [1], STEADY: [1]}, run.output
    assert "(confirmation)" not in run.stdout
    assert run.last_line == "no task regressed against the baseline: no confirmation attempts"
