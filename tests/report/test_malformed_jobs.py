"""A malformed job directory is a one-line error naming the file and the field, exit 1, for
every command that reads one (`summarize`, `report`, `compare`, `resume`), and nothing on disk
changes."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jobs_builder import build_job
from report_samples import sample_trials
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.config.condition import load_condition
from orchestra.config.task import load_task
from orchestra.documents.job import JobConfig
from orchestra.jobs.identity import replay_components, replay_record
from orchestra.paths import PROJECT_ROOT

Corruption = Callable[[dict[str, Any]], None]


def drop_plan(document: dict[str, Any]) -> None:
    del document["plan"]


def attempt_as_text(document: dict[str, Any]) -> None:
    document["attempt"] = "first"


def unknown_status(document: dict[str, Any]) -> None:
    document["status"] = "finished"


def unknown_error_type(document: dict[str, Any]) -> None:
    document["exception_info"] = {
        "exception_type": "Oops",
        "exception_message": "",
        "exception_traceback": "",
        "occurred_at": document["started_at"],
        "phase": "agent",
    }


# (what is corrupted, how, the field the message names, the problem it states)
CASES = [
    ("job", drop_plan, "plan", "required key is missing"),
    ("trial", attempt_as_text, "attempt", 'input should be a valid integer'),
    ("trial", unknown_status, "status", "input should be 'running', 'scored', 'error' or 'cancelled'"),
    ("trial", unknown_error_type, "exception_info.exception_type", "input should be"),
]  # fmt: skip


@pytest.fixture(autouse=True)
def repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # the sample job's manifest, endpoint config and task directories are repository paths
    monkeypatch.chdir(PROJECT_ROOT)


def resumable_job(jobs: Path) -> Path:
    """The sample job, with the replay identity `resume` computes for it (so resume gets as
    far as reading the trials)."""
    job = build_job(jobs, "sample-job", sample_trials(), attempts=2)
    config = JobConfig.load(job / "config.json")
    condition = load_condition(
        Path(config.manifest.path),
        Path(config.options.endpoint_config),
        Path(config.options.artifact_root),
        verify=False,
    )
    tasks = [load_task(Path(task.dir)) for task in config.plan.tasks]
    components = replay_components(condition, "local", config.plan.attempts, tasks)
    config.model_copy(update={"replay_identity": replay_record(components)}).write(
        job / "config.json"
    )
    return job


def corrupt(job: Path, target: str, corruption: Corruption) -> Path:
    path = job / "config.json" if target == "job" else sorted(job.glob("*/result.json"))[0]
    document = json.loads(path.read_text(encoding="utf-8"))
    corruption(document)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


COMMANDS = {
    "summarize": lambda job: ["summarize", str(job)],
    "report": lambda job: ["report", str(job), "--out-dir", str(job.parent / "reports")],
    "compare": lambda job: ["compare", str(job), str(job)],
    "resume": lambda job: ["resume", str(job), "--state-dir", str(job.parent / "state")],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("target", "corruption", "field", "problem"), CASES)
def test_malformed_job_is_a_one_line_error(
    tmp_path: Path, command: str, target: str, corruption: Corruption, field: str, problem: str
) -> None:
    job = resumable_job(tmp_path / "jobs")
    path = corrupt(job, target, corruption)
    before = snapshot(tmp_path)
    result = CliRunner().invoke(app, COMMANDS[command](job))
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # no traceback: a clean exit
    [line] = result.stderr.splitlines()
    shown = path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path
    assert line.startswith(f"error: {shown}: {field}: {problem}"), line
    assert snapshot(tmp_path) == before  # nothing moved, nothing written
