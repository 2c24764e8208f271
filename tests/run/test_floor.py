"""The do-nothing floor's cache and bookkeeping (docs/decisions.md D114): which runs compute it,
the roster on the null endpoint at no cost, one cache file per contract digest (only scored
trials cached, an unreadable file computed again), the run's `floor.json` with unknown floors
as None, and a floor job an earlier command started resumed with its own plan."""

from __future__ import annotations

import json
from pathlib import Path

from documents_support import job_config, trial_result

from orchestra.config.condition import Condition, load_condition
from orchestra.config.endpoints import NULL_ENDPOINT, load_endpoint_config
from orchestra.config.task import Task, load_task
from orchestra.documents.enums import TrialStatus
from orchestra.documents.floor import FloorRecord, RunFloor
from orchestra.documents.trial import TaskRecord
from orchestra.jobs.runner import JobOutcome
from orchestra.paths import PROJECT_ROOT, RunPaths, StatePaths
from orchestra.run.floor import (
    FLOOR_JOB,
    FloorPlan,
    cache_floor,
    cached_floor,
    floor_job,
    floor_line,
    floor_wanted,
    run_floor,
)

CONTRACTS = PROJECT_ROOT / "tasks" / "buzz-contracts"
FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "floor"


def tasks() -> list[Task]:
    return [load_task(CONTRACTS / name) for name in ("fyi-mention-silence", "exact-name-callback")]


def model_condition() -> Condition:
    return load_condition(
        PROJECT_ROOT / "manifests" / "buzz-native-solo-luna.yaml",
        PROJECT_ROOT / "endpoints" / "openai-live.json",
        verify=False,
    )


def test_the_null_endpoint_is_the_built_in_one() -> None:
    config = load_endpoint_config(PROJECT_ROOT / "endpoints" / "null.json")
    assert config["null"] == NULL_ENDPOINT


def test_only_a_models_run_computes_the_floor() -> None:
    model = model_condition()
    oracle = load_condition(
        PROJECT_ROOT / "manifests" / "buzz-native-solo-oracle.yaml",
        PROJECT_ROOT / "endpoints" / "oracle.json",
        verify=False,
    )
    null = load_condition(
        PROJECT_ROOT / "manifests" / "buzz-native-solo-null.yaml",
        PROJECT_ROOT / "endpoints" / "null.json",
        verify=False,
    )
    assert floor_wanted(model, no_floor=False, run=True)
    assert not floor_wanted(model, no_floor=True, run=True)  # --no-floor
    assert not floor_wanted(model, no_floor=False, run=False)  # a job from before runs
    assert not floor_wanted(oracle, no_floor=False, run=True)
    assert not floor_wanted(null, no_floor=False, run=True)


def test_the_do_nothing_condition_puts_every_seat_on_the_null_endpoint_at_no_cost() -> None:
    model = model_condition()
    nothing = model.do_nothing()
    assert nothing.manifest.roster == model.manifest.roster
    for entry in nothing.manifest.roster:
        assert nothing.endpoint(entry) == NULL_ENDPOINT
        price = nothing.manifest.prices[entry.endpoint]
        assert price.input_per_million_usd == price.output_per_million_usd == 0.0
    assert nothing.is_oracle and not model.is_oracle
    assert nothing.manifest_sha256 != model.manifest_sha256


def test_a_scored_floor_is_cached_by_contract_digest(tmp_path: Path) -> None:
    state = StatePaths(tmp_path)
    silence, callback = tasks()
    assert FloorPlan.of(state, [silence, callback]).owed == [silence, callback]
    scored = trial_result(silence.name, status=TrialStatus.SCORED, reward=1.0)
    cache_floor(state, silence, scored, "/runs/r/floor/fyi__1")
    assert state.floor_record(silence.contract_digest).is_file()
    plan = FloorPlan.of(state, [silence, callback])
    assert plan.owed == [callback]
    record = plan.cached[silence.name]
    assert (record.reward, record.task_name, record.trial) == (
        1.0,
        silence.name,
        "/runs/r/floor/fyi__1",
    )


def test_a_damaged_or_foreign_cache_file_is_computed_again(tmp_path: Path) -> None:
    state = StatePaths(tmp_path)
    silence = tasks()[0]
    path = state.floor_record(silence.contract_digest)
    path.parent.mkdir(parents=True)
    path.write_text('{"schema_version": 1, "reward": "high"}', encoding="utf-8")
    assert cached_floor(state, silence) is None
    path.write_text("not json", encoding="utf-8")
    assert cached_floor(state, silence) is None
    fixture = json.loads(next(FIXTURES.glob("75ce*.json")).read_text(encoding="utf-8"))
    path.write_text(json.dumps(fixture | {"contract_digest": "1" * 64}), encoding="utf-8")
    assert cached_floor(state, silence) is None  # another contract's floor
    fixture |= {"contract_digest": silence.contract_digest}
    path.write_text(json.dumps(fixture), encoding="utf-8")
    cached = cached_floor(state, silence)
    assert cached is not None and cached.reward == 1.0


def test_the_runs_floor_document_keeps_unknown_floors_unknown(tmp_path: Path) -> None:
    state = StatePaths(tmp_path / "state")
    silence, callback = tasks()
    outcome = JobOutcome(
        FLOOR_JOB,
        tmp_path / "run" / FLOOR_JOB,
        [
            trial_result(silence.name, status=TrialStatus.SCORED, reward=1.0),
            trial_result(callback.name, status=TrialStatus.ERROR),
        ],
        interrupted=False,
    )
    document = run_floor(FloorPlan.of(state, [silence, callback]), outcome, state)
    assert document.tasks[silence.name].reward == 1.0
    assert document.tasks[callback.name].reward is None  # unknown, never 0
    assert {t.source for t in document.tasks.values()} == {"trial"}
    assert document.tasks[silence.name].trial == str(outcome.path / "fyi-mention-silence__1")
    # only the scored trial is cached: the errored one is tried again by the next command
    again = FloorPlan.of(state, [silence, callback])
    assert again.owed == [callback]
    cached = run_floor(again, None, state)
    assert list(cached.tasks) == [silence.name] and cached.tasks[silence.name].source == "cache"
    assert floor_line(document) == (
        "do-nothing floor: 1.00 over 1 task; a do-nothing agent passes "
        "buzz-contracts/fyi-mention-silence; unknown (the floor trial did not score): "
        "buzz-contracts/exact-name-callback"
    )


def test_an_earlier_floor_job_resumes_with_its_own_plan(tmp_path: Path) -> None:
    run = RunPaths(tmp_path)
    silence, callback = tasks()
    fresh = floor_job(run, FLOOR_JOB, [callback], [silence, callback])
    assert (fresh.tasks, fresh.attempts, fresh.layer) == ((callback,), 1, "regression")
    earlier = job_config(
        FLOOR_JOB,
        plan={
            "layer": "regression",
            "attempts": 1,
            "tasks": [TaskRecord.model_validate(t.record()).model_dump() for t in tasks()],
        },
    )
    run.job(FLOOR_JOB).root.mkdir()
    earlier.write(run.job(FLOOR_JOB).config_json)
    # the earlier command planned both; one was cached since: the same plan, so it resumes
    resumed = floor_job(run, FLOOR_JOB, [callback], [silence, callback])
    assert resumed.tasks == (silence, callback)


def test_the_fixtures_read_as_their_models() -> None:
    floor = RunFloor.load(FIXTURES / "floor.json")
    assert floor.tasks["buzz-contracts/fyi-mention-silence"].passes
    assert not floor.tasks["buzz-contracts/exact-name-callback"].passes
    record = FloorRecord.load(next(FIXTURES.glob("75ce*.json")))
    assert record.task_name == "buzz-contracts/fyi-mention-silence"
