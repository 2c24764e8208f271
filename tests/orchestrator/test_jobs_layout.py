"""Jobs directory: atomic JSON, resume inventory, superseding, replay identity (§2.5, §10)."""

import json
import os
from pathlib import Path

import pytest

from orchestra.jobs.identity import differing_fields, replay_record
from orchestra.jobs.jsonio import utc_timestamp, write_json_atomic
from orchestra.jobs.layout import JobConfigMismatch, open_job
from orchestra.paths import JobPaths

SLOTS = [(1, "buzz-native/a"), (1, "buzz-native/b"), (2, "buzz-native/a"), (2, "buzz-native/b")]


def components(**overrides: object) -> dict:
    base = {
        "condition": "c" * 64,
        "endpoints": {"oracle": {"provider": "oracle"}},
        "environment": "local",
        "attempts": 2,
        "tasks": [{"name": "buzz-native/a", "digest": "1"}],
    }
    base.update(overrides)
    return replay_record(base)


def test_atomic_json_format(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    write_json_atomic(path, {"b": "ä", "a": [1]})
    assert path.read_text(encoding="utf-8") == '{\n  "a": [\n    1\n  ],\n  "b": "ä"\n}\n'
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    assert utc_timestamp().endswith("Z") and len(utc_timestamp()) == 27


def test_replay_identity_names_only_changed_fields() -> None:
    stored = components()
    assert differing_fields(stored, components()) == []
    assert differing_fields(stored, components(attempts=3)) == ["attempts"]
    assert differing_fields(stored, components(environment="docker", condition="d" * 64)) == [
        "condition",
        "environment",
    ]
    assert differing_fields(None, components()) == ["replay_identity"]


def trial_dir(job: JobPaths, name: str, task: str, attempt: int, status: str | None) -> Path:
    path = job.root / name
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"task": {"name": task}, "attempt": attempt}))
    if status is not None:
        (path / "result.json").write_text(
            json.dumps(
                {"trial_name": name, "task_name": task, "attempt": attempt, "status": status}
            )
        )
    return path


@pytest.mark.parametrize("keep_errors", [False, True])
def test_resume_keeps_scored_and_supersedes_the_rest(tmp_path: Path, keep_errors: bool) -> None:
    job = JobPaths(tmp_path / "job")
    config = {"job_name": "job", "replay_identity": components()}
    stored, inventory, resumed = open_job(job, dict(config), slots=SLOTS, keep_errors=False)
    assert not resumed and inventory.owed == SLOTS and stored["resumes"] == []
    trial_dir(job, "a1", "buzz-native/a", 1, "scored")
    trial_dir(job, "b1", "buzz-native/b", 1, "error")
    trial_dir(job, "a2", "buzz-native/a", 2, "cancelled")
    trial_dir(job, "b2", "buzz-native/b", 2, "running")
    trial_dir(job, "dead", "buzz-native/a", 2, None)
    again, inventory, resumed = open_job(job, dict(config), slots=SLOTS, keep_errors=keep_errors)
    assert resumed and again["id"] == stored["id"]
    kept = {("buzz-native/a", 1)} | ({("buzz-native/b", 1)} if keep_errors else set())
    assert set(inventory.kept) == kept
    assert len(inventory.owed) == 4 - len(kept)
    assert again["resumes"][0]["owed_trials"] == len(inventory.owed)
    moved = sorted(os.listdir(job.superseded_dir))
    assert moved == sorted({"b1", "a2", "b2", "dead"} - ({"b1"} if keep_errors else set()))
    assert (job.superseded_dir / "a2" / "result.json").exists()  # moved, never deleted


def test_resume_with_another_identity_is_refused(tmp_path: Path) -> None:
    job = JobPaths(tmp_path / "job")
    open_job(
        job, {"job_name": "job", "replay_identity": components()}, slots=SLOTS, keep_errors=False
    )
    with pytest.raises(JobConfigMismatch, match=r"\(tasks\); choose another --job-name"):
        open_job(
            job,
            {"job_name": "job", "replay_identity": components(tasks=[])},
            slots=SLOTS,
            keep_errors=False,
        )
