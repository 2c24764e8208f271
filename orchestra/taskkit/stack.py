"""Replaying a task's oracle and negative solutions through the real stack: the same `Run` as
`orchestra benchmark -p PATH` (oracle manifest and endpoint, `-k 1`), over private copies of
the tasks whose `solution/solve.sh` is the script under test; the trials are read from its
`RunOutcome`."""

from __future__ import annotations

import io
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.paths import (
    DEFAULT_ENDPOINT_CONFIG,
    DEFAULT_MANIFEST,
    PROJECT_ROOT,
    JobPaths,
    TaskPaths,
)
from orchestra.run.driver import Run
from orchestra.run.execution import Execution
from orchestra.run.outcome import Refused, RunOutcome
from orchestra.run.prepare import plan_benchmark


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
    """One script's trial: its result and its directory."""

    result: TrialResult
    trial_dir: Path


@dataclass(frozen=True)
class StackRun:
    outcome: RunOutcome
    replays: dict[str, Replay]  # by task directory name

    def why_no_trial(self) -> str:
        """How the run ended and its last error, for a task it recorded no trial of."""
        last = self.outcome.errors[-1].splitlines()[-1:] if self.outcome.errors else []
        return f"the run ended {self.outcome.end}: {last[0] if last else 'no error reported'}"


def replay(name: str, scripts: dict[Path, Path], options: StackOptions) -> StackRun:
    """One benchmark run over copies of the tasks in `scripts` (task dir -> the script to play
    as its solution); results keyed by task directory name."""
    dataset = options.work_dir / name / "tasks"
    for task_dir, script in scripts.items():
        copy = dataset / task_dir.name
        shutil.copytree(task_dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(script, TaskPaths(copy).solve_sh)
    config = options.run.updated(
        {
            "paths": [dataset],
            "attempts": 1,
            "manifest": PROJECT_ROOT / DEFAULT_MANIFEST,
            "endpoint_config": PROJECT_ROOT / DEFAULT_ENDPOINT_CONFIG,
            "jobs_dir": options.work_dir / name / "jobs",
            "job_name": name,
            "run_name": name,
            "new_run": True,
            "quiet": True,
        }
    )
    execution = Execution.of(config)
    try:
        plan = plan_benchmark(config, execution)
    except Refused as error:
        return StackRun(RunOutcome.refused(error), {})
    # the run's progress and notes are not the check's output: its lines name what failed
    quiet = Console(file=io.StringIO())
    outcome = Run(plan, execution, quiet, warn=lambda _line: None).execute()
    return StackRun(outcome, _replays(outcome))


def _replays(outcome: RunOutcome) -> dict[str, Replay]:
    """The last result of each task's trial (a rerun supersedes the attempt before it)."""
    return {
        result.short_name: Replay(result, JobPaths(job.path).trial(result.trial_name).root)
        for job in outcome.jobs
        for result in job.results
    }
