"""Runs for tests, made by the orchestrator's own code (`choose_run`, `RunTarget.begin`) over
real dataset tasks and the oracle condition, without running any trial."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from orchestra.config.condition import Condition, load_condition
from orchestra.config.task import load_task
from orchestra.documents.enums import EnvKind, StackMode
from orchestra.documents.run import RunRecord
from orchestra.documents.run_config import RunConfig, TaskSelection
from orchestra.jobs.run import RunRequest, choose_run
from orchestra.paths import DEFAULT_ENDPOINT_CONFIG, DEFAULT_MANIFEST, PROJECT_ROOT

DATASET = PROJECT_ROOT / "tasks" / "buzz-native"


def run_request(
    *task_dirs: Path,
    attempts: int | None = None,
    dataset: Path = DATASET,
    condition: Condition | None = None,
) -> RunRequest:
    """What `orchestra benchmark --env local` under `condition` (default: the oracle's) asks
    for."""
    condition = condition or load_condition(
        PROJECT_ROOT / DEFAULT_MANIFEST, PROJECT_ROOT / DEFAULT_ENDPOINT_CONFIG, verify=False
    )
    config = RunConfig(
        selection=TaskSelection(paths=[dataset], attempts=attempts),
        manifest=condition.manifest_path,
        endpoint_config=condition.endpoint_config.path,
        artifact_root=condition.artifact_root,
        stack=StackMode.EMBEDDED,
        env=EnvKind.LOCAL,
        state_dir=Path("/state"),
        n_concurrent=2,
    )
    tasks = tuple(load_task(d) for d in task_dirs)
    return RunRequest(condition, EnvKind.LOCAL, tasks, config)


def start_run(
    jobs_dir: Path,
    request: RunRequest,
    now: datetime | None = None,
    *,
    run_name: str | None = None,
    job_name: str | None = None,
) -> RunRecord:
    """A new run as `orchestra benchmark` records it before its first trial."""
    target, _ = choose_run(
        jobs_dir, request, run_name=run_name, job_name=job_name, new_run=True, now=now
    )
    target.begin(owed_trials=0)
    return target.record


def most_at_once(spans: list[tuple[str, str | None]]) -> int:
    """The most trials running at one moment, from their (started_at, finished_at) stamps (ISO
    stamps of one format sort as they happen; an end sorts before a start at the same
    instant)."""
    edges = sorted(
        [(start, 1) for start, _ in spans] + [(end or start, -1) for start, end in spans]
    )
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most
