"""Replaying a task's oracle and negative solutions through the real stack: the same
`run_benchmark` as `orchestra benchmark -p PATH` (oracle manifest and endpoint, `-k 1`),
over private copies of the tasks whose `solution/solve.sh` is the script under test."""

from __future__ import annotations

import contextlib
import io
import shutil
from dataclasses import dataclass
from pathlib import Path

from orchestra.cli.benchmark import run_benchmark
from orchestra.documents.io import DocumentError
from orchestra.documents.run_config import DEFAULT_RELAY_PORT, RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.paths import DEFAULT_ENDPOINT_CONFIG, DEFAULT_MANIFEST, PROJECT_ROOT, TaskPaths


@dataclass(frozen=True)
class StackOptions:
    """Where the check's runs go and which stack and environment they use."""

    work_dir: Path
    stack: str = "embedded"
    env: str = "local"
    relay_port: int = DEFAULT_RELAY_PORT
    relay_url: str | None = None
    state_dir: Path | None = None
    n_concurrent: int = 4


@dataclass(frozen=True)
class Replay:
    """One script's trial: its result (None when no trial was recorded) and its directory."""

    result: TrialResult | None
    trial_dir: Path | None


@dataclass(frozen=True)
class StackRun:
    exit_code: int
    output: str
    replays: dict[str, Replay]  # by task directory name


def replay(name: str, scripts: dict[Path, Path], options: StackOptions) -> StackRun:
    """One benchmark job over copies of the tasks in `scripts` (task dir -> the script to play
    as its solution); results keyed by task directory name."""
    dataset = options.work_dir / name / "tasks"
    for task_dir, script in scripts.items():
        copy = dataset / task_dir.name
        shutil.copytree(task_dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(script, TaskPaths(copy).solve_sh)
    jobs_dir = options.work_dir / name / "jobs"
    config = RunConfig().updated(
        {
            "path": dataset,
            "attempts": 1,
            "manifest": PROJECT_ROOT / DEFAULT_MANIFEST,
            "endpoint_config": PROJECT_ROOT / DEFAULT_ENDPOINT_CONFIG,
            "n_concurrent": options.n_concurrent,
            "jobs_dir": jobs_dir,
            "job_name": name,
            "run_name": name,
            "new_run": True,
            "stack": options.stack,
            "env": options.env,
            "relay_url": options.relay_url,
            "relay_port": options.relay_port,
            "state_dir": options.state_dir or options.work_dir / "state",
            "quiet": True,
        }
    )
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = run_benchmark(config)
    return StackRun(code, output.getvalue(), _replays(jobs_dir / name / name))


def _replays(job_dir: Path) -> dict[str, Replay]:
    replays: dict[str, Replay] = {}
    for path in sorted(job_dir.glob("*/result.json")):
        try:
            result = TrialResult.load(path)
        except DocumentError:
            continue
        replays[result.short_name] = Replay(result, path.parent)
    return replays
