"""`just nightly --baseline-history DB` end to end (docs/statistics.md "The nightly decision"):
after three oracle runs of both suites' regression tasks are in a results database, a night with
nothing changed exits 0, and a night where one task's oracle replays its negative solution
confirms that task on fresh attempts and exits 3, naming it last. The real embedded relay and
PostgreSQL, the oracle, k = 1, the regression layer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e_jobs import JOB_TIMEOUT_SECONDS, N_CONCURRENT, NEGATIVE_SOLUTIONS, ORCHESTRA

from orchestra.paths import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

JUST = Path(sys.executable).with_name("just")
SUITES = ("buzz-native", "buzz-contracts")
NEGATED = "user-mention"
#: the regression tasks of both suites
N_REGRESSION_TASKS = 13


def suites_copy(where: Path, *, negate: bool) -> list[Path]:
    """Both suites in directories named as the real ones (task names match); with `negate`,
    one task's oracle solution is its negative one (its contract digest is unchanged: the
    history pools it)."""
    copies = []
    for suite in SUITES:
        copy = where / suite
        shutil.copytree(
            PROJECT_ROOT / "tasks" / suite, copy, ignore=shutil.ignore_patterns("__pycache__")
        )
        copies.append(copy)
    if negate:
        shutil.copy(
            NEGATIVE_SOLUTIONS / f"{NEGATED}.sh",
            where / "buzz-native" / NEGATED / "solution" / "solve.sh",
        )
    return copies


@dataclass(frozen=True)
class Night:
    returncode: int
    stdout: str
    output: str
    run_dir: Path

    def attempts(self) -> dict[str, list[int]]:
        """Task name -> the attempts that ran."""
        found: dict[str, list[int]] = {}
        for path in self.run_dir.glob("*/*/result.json"):
            result = json.loads(path.read_text(encoding="utf-8"))
            found.setdefault(result["task_name"], []).append(result["attempt"])
        return {task: sorted(numbers) for task, numbers in found.items()}


def stack_args(scratch: Path, name: str, relay_url: str, database_url: str) -> list[str]:
    return [
        "--stack", "external", "--relay-url", relay_url, "--database-url", database_url,
        "--env", "local", "-n", str(N_CONCURRENT), "-k", "1",
        "--jobs-dir", str(scratch / "jobs"), "--state-dir", str(scratch / "state" / name), "-q",
    ]  # fmt: skip


def paths(copies: list[Path]) -> list[str]:
    return [arg for copy in copies for arg in ("-p", str(copy))]


@pytest.fixture(scope="module")
def history(scratch: Path, relay_url: str, embedded_pg) -> Path:
    """Three oracle runs of the regression layer, added to a results database."""
    database = scratch / "results.db"
    copies = suites_copy(scratch / "history-tasks", negate=False)
    runs = []
    for night in range(3):
        name = f"history-{night}"
        args = [str(ORCHESTRA), "benchmark", "--layer", "regression", "--run-name", name,
                *paths(copies), *stack_args(scratch, name, relay_url, embedded_pg.new_database_url())]  # fmt: skip
        done = subprocess.run(args, capture_output=True, text=True, timeout=JOB_TIMEOUT_SECONDS)
        assert done.returncode == 0, done.stdout + done.stderr
        runs.append(str(scratch / "jobs" / name))
    added = subprocess.run(
        [str(ORCHESTRA), "db", *runs, "-o", str(database)], capture_output=True, text=True
    )
    assert added.returncode == 0, added.stdout + added.stderr
    return database


def nightly(
    scratch: Path, name: str, database: Path, relay_url: str, database_url: str, *, negate: bool
) -> Night:
    copies = suites_copy(scratch / f"{name}-tasks", negate=negate)
    jobs = scratch / "jobs"
    before = set(jobs.iterdir())
    # 4 confirmation attempts (the nightly's 12 run one at a time): 0 of 4 against 4 of 4
    args = [str(JUST), "nightly", *paths(copies), "--baseline-history", str(database),
            "--confirm-attempts", "4", *stack_args(scratch, name, relay_url, database_url)]  # fmt: skip
    done = subprocess.run(
        args, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=JOB_TIMEOUT_SECONDS
    )
    (run_dir,) = set(jobs.iterdir()) - before
    output = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return Night(done.returncode, done.stdout, output, run_dir)


def test_an_unchanged_night_exits_0_and_a_negated_task_is_confirmed_last(
    scratch: Path, history: Path, relay_url: str, embedded_pg
) -> None:
    quiet = nightly(
        scratch, "unchanged", history, relay_url, embedded_pg.new_database_url(), negate=False
    )
    assert quiet.returncode == 0, quiet.output
    attempts = quiet.attempts()
    assert len(attempts) == N_REGRESSION_TASKS, quiet.output
    assert all(numbers == [1] for numbers in attempts.values()), quiet.output
    assert "3 runs of condition" in quiet.stdout, quiet.output
    assert (quiet.run_dir / "compare.md").is_file()

    negated = nightly(
        scratch, "negated", history, relay_url, embedded_pg.new_database_url(), negate=True
    )
    assert negated.returncode == 3, negated.output
    task = f"buzz-native/{NEGATED}"
    attempts = negated.attempts()
    assert len(attempts) == N_REGRESSION_TASKS, negated.output
    assert attempts[task] == [1, 2, 3, 4, 5], negated.output
    assert "4 runs of condition" in negated.stdout, negated.output  # tonight's predecessor too
    last = negated.stdout.strip().splitlines()[-1]
    assert last.startswith("exit 3: confirmed regression"), negated.output
    assert last.endswith(f": {task}"), negated.output
