"""Jobs directory: atomic JSON, resume inventory, superseding, replay identity (§2.5, §10)."""

import json
import os
import random
from pathlib import Path

import pytest
from documents_support import job_config, trial_result

from orchestra.documents.enums import TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig, ReplayIdentity
from orchestra.jobs.identity import differing_fields, replay_record
from orchestra.jobs.layout import JobConfigMismatch, open_job
from orchestra.jobs.result import JobResultRecorder
from orchestra.jsonio import dumps_pretty, utc_timestamp, write_json_atomic
from orchestra.paths import JobPaths

SLOTS = [(1, "buzz-native/a"), (1, "buzz-native/b"), (2, "buzz-native/a"), (2, "buzz-native/b")]


def components(**overrides: object) -> ReplayIdentity:
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
    same_fields = ReplayIdentity(sha256="0" * 64, fields=components().fields)
    assert differing_fields(same_fields, components()) == ["replay_identity"]


def trial_dir(job: JobPaths, name: str, task: str, attempt: int, status: str | None) -> Path:
    path = job.root / name
    path.mkdir(parents=True)
    if status is not None:
        trial_result(task, attempt, trial_name=name, status=status).write(path / "result.json")
    return path


def new_job(identity: ReplayIdentity | None = None) -> JobConfig:
    return job_config(replay_identity=identity or components())


@pytest.mark.parametrize("keep_errors", [False, True])
def test_resume_keeps_scored_and_supersedes_the_rest(tmp_path: Path, keep_errors: bool) -> None:
    job = JobPaths(tmp_path / "job")
    stored, inventory, resumed = open_job(job, new_job(), slots=SLOTS, keep_errors=False)
    assert not resumed and inventory.owed == SLOTS and stored.resumes == []
    trial_dir(job, "a1", "buzz-native/a", 1, "scored")
    trial_dir(job, "b1", "buzz-native/b", 1, "error")
    trial_dir(job, "a2", "buzz-native/a", 2, "cancelled")
    trial_dir(job, "b2", "buzz-native/b", 2, "running")
    trial_dir(job, "dead", "buzz-native/a", 2, None)
    rerun = new_job().model_copy(update={"id": "another-id"})
    again, inventory, resumed = open_job(job, rerun, slots=SLOTS, keep_errors=keep_errors)
    assert resumed and again.id == stored.id
    kept = {("buzz-native/a", 1)} | ({("buzz-native/b", 1)} if keep_errors else set())
    assert set(inventory.kept) == kept
    assert len(inventory.owed) == 4 - len(kept)
    assert again.resumes[0].owed_trials == len(inventory.owed)
    assert JobConfig.load(job.config_json).resumes == again.resumes
    moved = sorted(os.listdir(job.superseded_dir))
    assert moved == sorted({"b1", "a2", "b2", "dead"} - ({"b1"} if keep_errors else set()))
    assert (job.superseded_dir / "a2" / "result.json").exists()  # moved, never deleted


def test_resume_with_another_identity_is_refused(tmp_path: Path) -> None:
    job = JobPaths(tmp_path / "job")
    open_job(job, new_job(), slots=SLOTS, keep_errors=False)
    with pytest.raises(JobConfigMismatch, match=r"\(tasks\); choose another --job-name"):
        open_job(job, new_job(components(tasks=[])), slots=SLOTS, keep_errors=False)


def test_resume_stops_at_a_malformed_trial_with_nothing_moved(tmp_path: Path) -> None:
    job = JobPaths(tmp_path / "job")
    open_job(job, new_job(), slots=SLOTS, keep_errors=False)
    trial_dir(job, "b1", "buzz-native/b", 1, "error")
    broken = trial_dir(job, "a1", "buzz-native/a", 1, "scored") / "result.json"
    broken.write_text(broken.read_text().replace('"scored"', '"finished"'))
    with pytest.raises(DocumentError, match=r"a1/result.json: status: input should be"):
        open_job(job, new_job(), slots=SLOTS, keep_errors=False)
    assert sorted(p.name for p in job.root.iterdir()) == ["a1", "b1", "config.json"]


def test_job_result_rewritten_at_each_trial_state_change_only(tmp_path: Path) -> None:
    paths = JobPaths.of(tmp_path, "j")
    job = JobResultRecorder(paths, job_config("j"), n_planned=1)
    job.update(trial_result("buzz-native/a", trial_name="t"))
    assert json.loads(paths.result_json.read_text())["stats"]["n_running"] == 1
    os.utime(paths.result_json, ns=(0, 0))
    tokens = {"input": 5, "cached_input": 0, "output": 1, "per_agent": {}}
    job.update(trial_result("buzz-native/a", trial_name="t", phase="agent", tokens=tokens))
    assert paths.result_json.stat().st_mtime_ns == 0  # a phase is not a state change
    final = {"status": TrialStatus.SCORED, "reward": 1.0, "finished_at": utc_timestamp()}
    tokens = tokens | {"input": 7}
    job.update(trial_result("buzz-native/a", trial_name="t", tokens=tokens, **final))
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
