"""Jobs directory: atomic JSON, resume inventory, superseding, replay identity (§2.5, §10)."""

import json
import os
import random
from pathlib import Path

import pytest

from orchestra.jobs.identity import differing_fields, replay_record
from orchestra.jobs.jsonio import dumps_pretty, utc_timestamp, write_json_atomic
from orchestra.jobs.layout import JobConfigMismatch, open_job
from orchestra.jobs.result import JobResult
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


def _job_config() -> dict:
    return {
        "id": "6a26f1b0-4616-4e0d-84fc-b60b2a1801b3",
        "job_name": "j",
        "manifest": {"condition": "c", "sha256": "s" * 64, "path": "m.yaml"},
        "plan": {"attempts": 1, "layer": "regression", "tasks": []},
    }


def test_job_result_rewritten_at_each_trial_state_change_only(tmp_path: Path) -> None:
    paths = JobPaths.of(tmp_path, "j")
    job = JobResult(paths, _job_config(), n_planned=1)
    trial = {"trial_name": "t", "task_name": "buzz-native/a", "attempt": 1, "layer": "regression"}
    trial |= {"status": "running", "phase": "setup", "reward": None, "tokens": None}
    job.update(trial)
    assert json.loads(paths.result_json.read_text())["stats"]["n_running"] == 1
    os.utime(paths.result_json, ns=(0, 0))
    job.update(trial | {"phase": "agent", "tokens": {"input": 5, "cached_input": 0, "output": 1}})
    assert paths.result_json.stat().st_mtime_ns == 0  # a phase is not a state change
    final = {"status": "scored", "reward": 1.0, "finished_at": utc_timestamp()}
    job.update(trial | {"tokens": {"input": 7, "cached_input": 0, "output": 1}} | final)
    document = json.loads(paths.result_json.read_text())
    assert document["trials"][0]["status"] == "scored" and document["finished_at"] is not None
    assert document["stats"]["tokens"]["input"] == 7 and document["stats"]["n_running"] == 0


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_pretty_json_is_what_the_standard_library_writes(ensure_ascii: bool) -> None:
    rng = random.Random(7)
    alphabet = [chr(c) for c in [*range(0x250), 0x2028, 0xFFFD, 0x1F600, 0x10FFFF]]
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        value = {text: [text, {"x": text}], "f": rng.random() * 100, "i": rng.randint(-9, 9)}
        expected = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=ensure_ascii) + "\n"
        assert dumps_pretty(value, ensure_ascii=ensure_ascii) == expected
    beyond_orjson = {1: 2**70, 2: "\ud800"}  # int keys, a 70-bit int, a lone surrogate
    expected = json.dumps(beyond_orjson, sort_keys=True, indent=2, ensure_ascii=ensure_ascii)
    assert dumps_pretty(beyond_orjson, ensure_ascii=ensure_ascii) == expected + "\n"
