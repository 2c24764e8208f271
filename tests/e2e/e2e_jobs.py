"""Helpers of the end-to-end dataset tests: the dataset, its negative solutions, and running one
real `orchestra benchmark` job (a module of its own, not conftest, so that test modules can
import it by a name no other test directory's conftest shadows)."""

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestra.paths import PROJECT_ROOT

ORCHESTRA = Path(sys.executable).with_name("orchestra")
DATASET = PROJECT_ROOT / "tasks" / "buzz-native"
NEGATIVE_SOLUTIONS = PROJECT_ROOT / "tests" / "fixtures" / "negative-solutions"
# Oracle trials mostly wait (an agent is busy ~1-4 s of a ~7-11 s agent phase), so on 2 cores more
# trials in flight shorten the job: ten oracle trials took 47 s at -n 2, 42 s at -n 4, 36 s at -n 6
# and 33 s at -n 10; 6 keeps nearly all of the gain at less contention (docs/performance.md).
N_CONCURRENT = 6
JOB_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class JobRun:
    returncode: int
    stdout: str
    stderr: str
    wall_seconds: float
    job_dir: Path
    results: dict[str, dict[str, Any]]

    @property
    def output(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"

    @property
    def run_dir(self) -> Path:
        """The run holding the job, where `--report` writes the run's reports."""
        return self.job_dir.parent


def dataset_task_names() -> list[str]:
    return sorted(p.name for p in DATASET.iterdir() if (p / "task.toml").is_file())


def copy_dataset(dest: Path) -> Path:
    """A private copy: concurrent work on the dataset must not change the tasks under the test."""
    shutil.copytree(DATASET, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def trial_results(job_dir: Path) -> dict[str, dict[str, Any]]:
    """Each trial's result.json by task directory name (`-k 1`: one trial per task)."""
    results: dict[str, dict[str, Any]] = {}
    for path in sorted(job_dir.glob("*/result.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        assert result["short_name"] not in results, f"two trials of {result['short_name']}"
        results[result["short_name"]] = result
    return results


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_orchestra_job(
    scratch: Path,
    path: Path,
    job_name: str,
    *stack_args: str,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> JobRun:
    """The installed `orchestra` script (what `just benchmark` runs), oracle condition, `-k 1`,
    local env: pinned, because `auto` picks the docker env where a Docker engine answers. `env`
    replaces the environment it runs in; `prefix` goes before the command (a confinement)."""
    args = [
        *prefix, str(ORCHESTRA), "benchmark", "--path", str(path), "-k", "1", "--env", "local",
        "-n", str(N_CONCURRENT), "--jobs-dir", str(scratch / "jobs"),
        "--state-dir", str(scratch / "state" / job_name), "--job-name", job_name,
        *stack_args,
    ]  # fmt: skip
    started = time.monotonic()
    process = subprocess.run(
        args, capture_output=True, text=True, timeout=JOB_TIMEOUT_SECONDS, env=env
    )
    wall = time.monotonic() - started
    job_dir = scratch / "jobs" / job_name / job_name  # `-k 1`: the run holds one job, its namesake
    results = trial_results(job_dir) if job_dir.is_dir() else {}
    return JobRun(process.returncode, process.stdout, process.stderr, wall, job_dir, results)
