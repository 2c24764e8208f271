"""Replaying a task's oracle and negative solutions through the real stack: the same
`run_benchmark` as `orchestra benchmark -p PATH` (oracle manifest and endpoint, `-k 1`),
over private copies of the tasks whose `solution/solve.sh` is the script under test."""

from __future__ import annotations

import contextlib
import io
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from orchestra.cli.benchmark import run_benchmark
from orchestra.documents.io import DocumentError
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.paths import DEFAULT_ENDPOINT_CONFIG, DEFAULT_MANIFEST, PROJECT_ROOT, TaskPaths


def check_run(given: dict[str, object] | None = None) -> RunConfig:
    """The run options a check starts from: the embedded stack and the local environment (not
    `auto`: a check must not depend on whether Docker is up), with `given` on top."""
    return RunConfig().updated({"stack": "embedded", "env": "local", **(given or {})})


@dataclass(frozen=True)
class StackOptions:
    """Where the check's runs go, and the run options they share (stack, environment, relay,
    state directory, concurrency): the rest of each replay's `RunConfig` is the check's own."""

    work_dir: Path
    run: RunConfig = field(default_factory=check_run)


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
    config = options.run.updated(
        {
            "path": dataset,
            "attempts": 1,
            "manifest": PROJECT_ROOT / DEFAULT_MANIFEST,
            "endpoint_config": PROJECT_ROOT / DEFAULT_ENDPOINT_CONFIG,
            "jobs_dir": jobs_dir,
            "job_name": name,
            "run_name": name,
            "new_run": True,
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
