"""The job `result.json`'s running sums: after any sequence of trial state changes,
reruns and resumes, the incrementally kept document is the one a fresh aggregation of the same
trials gives; its rewrites are coalesced under a schedule, and the last one is complete."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from documents_support import SHA, job_config, trial_result

from orchestra.documents.enums import TrialStatus
from orchestra.documents.job import JobConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.aggregate import JobRecord, aggregate
from orchestra.jobs.result import JobResultRecorder
from orchestra.jobs.tally import ExactSum, seconds_between
from orchestra.paths import JobPaths

TASKS = [("buzz-native/a", "regression"), ("buzz-native/b", "regression"),
         ("buzz-native/c", "workflow"), ("buzz-native/d", "workflow")]  # fmt: skip
ATTEMPTS = 3
#: rewards, costs and durations whose float sums depend on the order they are added in
REWARDS = [0.0, 0.1, 0.2, 1 / 3, 0.7, 1.0]
COSTS = [0.1, 0.2, 0.3, 1e-9, 0.0123456789, 7.0]


def planned_config(name: str = "j") -> JobConfig:
    tasks = [
        {"name": task, "short_name": task.rpartition("/")[2], "dir": task, "layer": layer,
         "digest": SHA}
        for task, layer in TASKS
    ]  # fmt: skip
    return job_config(name, plan={"layer": "mixed", "attempts": ATTEMPTS, "tasks": tasks})


def random_result(rng: random.Random, name: str, task: str, layer: str, attempt: int,
                  status: TrialStatus) -> TrialResult:  # fmt: skip
    fields: dict[str, Any] = {"trial_name": name, "layer": layer, "status": status}
    if rng.random() < 0.8:
        output = rng.randint(0, 50)
        fields["tokens"] = {"input": rng.randint(0, 900), "cached_input": rng.randint(0, 9),
                            "output": output, "per_agent": {}}  # fmt: skip
        fields["cost_usd"] = rng.choice([*COSTS, None])
    if status.terminal:
        minute, second, micros = rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999999)
        fields["finished_at"] = f"2026-11-29T10:{minute:02d}:{second:02d}.{micros:06d}Z"
    if status is TrialStatus.SCORED:
        reward = rng.choice(REWARDS)
        dims = {name: rng.choice([0.0, 0.5, 1.0]) for name in rng.sample(["x", "y", "z"], 2)}
        fields |= {"reward": reward, "rewards": {"reward": reward, **dims}}
    if status is TrialStatus.ERROR and rng.random() < 0.5:
        fields["exception_info"] = {"exception_type": "AgentReadinessTimeout",
                                    "exception_message": "m", "exception_traceback": "",
                                    "occurred_at": fields["finished_at"], "phase": "setup"}  # fmt: skip
    return trial_result(task, attempt, **fields)


def from_scratch(recorder: JobResultRecorder, latest: dict[str, TrialResult]) -> dict[str, Any]:
    """What the job document says, recomputed from the trials' latest results with nothing
    kept (`latest`: every result the recorder was given, by trial, minus those it forgot)."""
    assert set(latest) == set(recorder.trials)
    record = JobRecord.from_config(recorder.config, recorder.paths.root)
    record.trials = list(latest.values())
    trials = record.trials
    billed = [t for t in trials if t.tokens is not None]
    [condition] = aggregate([record]).conditions
    return {
        "aggregates": {
            name: layer.model_dump(mode="json") for name, layer in condition.layers.items()
        },
        "counts": {status: sum(t.status is status for t in trials) for status in TrialStatus},
        "tokens": [
            sum(t.tokens.input for t in billed if t.tokens),
            sum(t.tokens.output for t in billed if t.tokens),
        ],
        "cost_usd": math.fsum(t.cost_usd or 0.0 for t in billed),
        "tasks": task_numbers(trials),
    }


TaskNumbers = tuple[int, float | None, int, float, tuple[int, int, int] | None]


def task_numbers(trials: list[TrialResult]) -> dict[str, TaskNumbers]:
    """Per task, straight from the trials: scored, pass rate, failing `x` (attempts up to k),
    mean seconds (every attempt), and the confirmation attempts' (attempts, scored, passes)."""
    numbers = {}
    for task, _ in TASKS:
        mine = [t for t in trials if t.task_name == task]
        scored = [t for t in mine if t.status is TrialStatus.SCORED and t.attempt <= ATTEMPTS]
        beyond = [t for t in mine if t.attempt > ATTEMPTS]
        beyond_scored = [t for t in beyond if t.status is TrialStatus.SCORED]
        rewards = [t.reward or 0.0 for t in scored]
        failing_x = sum((t.rewards or {}).get("x", 1.0) < 1.0 for t in scored)
        seconds = [seconds_between(t.started_at, t.finished_at) for t in mine if t.finished_at]
        numbers[task] = (
            len(scored),
            math.fsum(rewards) / len(rewards) if rewards else None,
            failing_x,
            math.fsum(seconds) / len(seconds) if seconds else 0.0,
            (len(beyond), len(beyond_scored), sum(t.reward == 1.0 for t in beyond_scored))
            if beyond
            else None,
        )
    return numbers


def kept(recorder: JobResultRecorder) -> dict[str, Any]:
    document = recorder.document()
    stats = document.stats
    return {
        "aggregates": {name: layer.model_dump(mode="json") for name, layer in document.aggregates.items()},
        "counts": {
            TrialStatus.SCORED: stats.n_scored, TrialStatus.ERROR: stats.n_errors,
            TrialStatus.CANCELLED: stats.n_cancelled, TrialStatus.RUNNING: stats.n_running,
        },
        "tokens": [stats.tokens.input, stats.tokens.output],
        "cost_usd": stats.cost_usd,
        "tasks": {
            name: (task.scored, task.pass_rate, task.failing_dimensions.get("x", 0),
                   task.mean_trial_seconds or 0.0,
                   (c.attempts, c.scored, c.passes) if (c := task.confirmation) else None)
            for layer in document.aggregates.values() for name, task in layer.tasks.items()
        },
    }  # fmt: skip


class FakeLoop:
    """`call_later` that runs nothing until told to."""

    def __init__(self) -> None:
        self.timers: list[FakeTimer] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(delay, callback)
        self.timers.append(timer)
        return timer

    def fire(self) -> None:
        live = [timer for timer in self.timers if not timer.cancelled]
        self.timers = []
        for timer in live:
            timer.callback()


class FakeTimer:
    def __init__(self, delay: float, callback: Callable[[], None]) -> None:
        self.delay, self.callback, self.cancelled = delay, callback, False

    def cancel(self) -> None:
        self.cancelled = True


@pytest.mark.parametrize("seed", range(6))
def test_running_sums_equal_a_fresh_aggregation_through_reruns_and_resumes(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    paths = JobPaths.of(tmp_path, "j")

    def new_recorder() -> JobResultRecorder:  # rewrites wait for a timer that never fires
        n_planned = len(TASKS) * ATTEMPTS
        return JobResultRecorder(paths, planned_config(), n_planned, schedule=FakeLoop().call_later)

    recorder = new_recorder()
    latest: dict[str, TrialResult] = {}  # what the trial directories hold

    def change(result: TrialResult) -> None:
        latest[result.trial_name] = result
        recorder.update(result)

    running: dict[str, tuple[str, str, int]] = {}
    for step in range(160):
        roll = rng.random()
        if roll < 0.3 or not running:  # a trial starts
            task, layer = rng.choice(TASKS)
            name = f"t{step}"
            running[name] = (task, layer, rng.randint(1, ATTEMPTS + 2))  # beyond k: confirmation
            change(random_result(rng, name, task, layer, running[name][2], TrialStatus.RUNNING))
        elif roll < 0.5:  # a phase change: usage so far, same state
            name = rng.choice(sorted(running))
            change(random_result(rng, name, *running[name], TrialStatus.RUNNING))
        elif roll < 0.8:  # it ends
            name = rng.choice(sorted(running))
            status = rng.choice([TrialStatus.SCORED, TrialStatus.ERROR, TrialStatus.CANCELLED])
            change(random_result(rng, name, *running.pop(name), status))
        elif roll < 0.9:  # a finished trial is superseded by its rerun (or a resume's)
            finished = sorted(set(recorder.trials) - set(running))
            if finished:
                gone = rng.choice(finished)
                recorder.forget(gone)
                del latest[gone]
        else:  # the orchestrator is restarted: a resume seeds what the trial directories hold
            survivors = list(latest.values())
            rng.shuffle(survivors)
            recorder = new_recorder()
            recorder.seed(survivors)
        assert kept(recorder) == from_scratch(recorder, latest), f"step {step}"
    reordered = new_recorder()
    reordered.seed(sorted(latest.values(), key=lambda t: t.trial_name, reverse=True))
    assert kept(reordered) == kept(recorder)  # the order trials came in changes no number


def test_float_sums_do_not_depend_on_order() -> None:
    total = ExactSum()
    for value in [0.1] * 10 + [1e16, -1e16]:
        total.add(value)
    assert total.value == math.fsum([0.1] * 10) == 1.0  # a plain sum gives 0.9999999999999999
    total.add(1e16, -1)
    total.add(-1e16, -1)
    assert total.value == 1.0
    total.add(math.inf)
    assert total.value == math.inf
    total.add(-math.inf)
    assert math.isnan(total.value)
    total.add(math.inf, -1)
    total.add(-math.inf, -1)
    assert total.value == 1.0


def stored(paths: JobPaths) -> dict[str, Any]:
    document = json.loads(paths.result_json.read_text())
    for changing in ("started_at", "updated_at", "finished_at"):
        document[changing] = document[changing] is not None
    return document


def test_rewrites_are_coalesced_and_the_last_one_is_complete(tmp_path: Path) -> None:
    loop = FakeLoop()
    rng = random.Random(3)
    coalesced = JobResultRecorder(
        JobPaths.of(tmp_path, "c"), planned_config("c"), len(TASKS) * ATTEMPTS,
        schedule=loop.call_later,
    )  # fmt: skip
    direct = JobResultRecorder(
        JobPaths.of(tmp_path, "d"), planned_config("d"), len(TASKS) * ATTEMPTS
    )
    slots = [(task, layer, attempt) for attempt in range(1, ATTEMPTS + 1) for task, layer in TASKS]
    results = [
        random_result(rng, f"t{i}", *slot, TrialStatus.RUNNING) for i, slot in enumerate(slots)
    ]
    coalesced.update(results[0])
    assert stored(coalesced.paths)["stats"]["n_running"] == 1  # the first change writes at once
    for result in results[1:]:
        coalesced.update(result)
    assert stored(coalesced.paths)["stats"]["n_running"] == 1  # the rest wait for the timer
    [timer] = loop.timers  # one rewrite pending for all of them
    assert timer.delay > 0
    loop.fire()
    assert stored(coalesced.paths)["stats"]["n_running"] == len(slots)
    for i, slot in enumerate(slots):
        final = random_result(rng, f"t{i}", *slot, TrialStatus.SCORED)
        coalesced.update(final)
        direct.update(final)
    # the last trial to finish finishes the job: written at once, the pending rewrite dropped
    assert all(timer.cancelled for timer in loop.timers)
    expected = stored(direct.paths)
    assert expected["finished_at"] and expected["stats"]["n_scored"] == len(slots)
    assert stored(coalesced.paths) == expected | {"job_name": "c"}
