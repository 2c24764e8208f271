"""Per task, the pass rate over successive runs of one condition (`orchestra trend`), read from
a results database (run directories are first added to one in memory).

Runs are ordered by their start time (`runs.created_at`). A task's outcome in a run is `pass`
(every scored trial passed), `fail` (none did), `mixed` (some did) or `none` (no scored
trial). Over the runs a task is:
- `flaky` when it was mixed in a run, or went pass → fail → pass (or the reverse): two changes
  or more; `since` is the first run that showed it (the mixed run or the first change);
- `flipped` when it changed between pass and fail exactly once, never mixed; `since` is the run
  of the change, `now` what it is since then;
- `stable` otherwise.
Each pass rate carries a 95 % Wilson interval (scipy, imported here only: never on a trial's
path).
"""

from __future__ import annotations

import sqlite3
from itertools import groupby, pairwise
from typing import Literal

from pydantic import BaseModel, ConfigDict

CONFIDENCE = 0.95
Outcome = Literal["pass", "fail", "mixed", "none"]
Mark = Literal["stable", "flipped", "flaky"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Rate(_Part):
    """`passed` of `scored` trials, the rate and its 95 % Wilson interval (null when nothing
    was scored)."""

    passed: int
    scored: int
    pass_rate: float | None
    low: float | None
    high: float | None


class TrendRun(_Part):
    name: str
    created_at: str
    overall: Rate  # every scored trial of the condition in this run


class TaskPoint(_Part):
    run: str
    outcome: Outcome
    rate: Rate
    errors: int  # trials that ended in an error (not in `rate`)


class TaskTrend(_Part):
    task_name: str
    layer: str
    points: list[TaskPoint | None]  # one per run of the condition; null: not in that run
    mark: Mark
    since: str | None  # the run where the mark began
    now: Literal["pass", "fail"] | None  # `flipped`: what the task is since the change


class ConditionTrend(_Part):
    condition: str
    runs: list[TrendRun]
    tasks: list[TaskTrend]


class Trend(_Part):
    schema_version: Literal[1] = 1
    conditions: list[ConditionTrend]


def rate(passed: int, scored: int) -> Rate:
    if scored == 0:
        return Rate(passed=0, scored=0, pass_rate=None, low=None, high=None)
    from scipy.stats import binomtest  # the statistics commands only

    interval = binomtest(passed, scored).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return Rate(
        passed=passed,
        scored=scored,
        pass_rate=passed / scored,
        low=float(interval.low),
        high=float(interval.high),
    )


def classify(
    points: list[TaskPoint | None],
) -> tuple[Mark, str | None, Literal["pass", "fail"] | None]:
    """The task's mark, the run it began in, and (flipped) what it is now."""
    seen = [point for point in points if point is not None]
    definite = [p for p in seen if p.outcome in ("pass", "fail")]
    changes = [b for a, b in pairwise(definite) if a.outcome != b.outcome]
    mixed = next((p for p in seen if p.outcome == "mixed"), None)
    if mixed is not None or len(changes) >= 2:
        firsts = [p for p in (mixed, changes[0] if changes else None) if p is not None]
        since = min(firsts, key=seen.index)
        return "flaky", since.run, None
    if changes:
        change = changes[0]
        now: Literal["pass", "fail"] = "pass" if change.outcome == "pass" else "fail"
        return "flipped", change.run, now
    return "stable", None, None


TASK_RUNS = """
SELECT condition, run_key, run_name, run_created_at, layer, task_name, scored, passed, outcome,
       errors
FROM task_runs ORDER BY condition, run_created_at, run_key, layer, task_name
"""


def read_trend(connection: sqlite3.Connection) -> Trend:
    """The trend of every condition in the database, runs oldest first."""
    rows = connection.execute(TASK_RUNS).fetchall()
    conditions = []
    for condition, of_condition in groupby(rows, key=lambda row: row[0]):
        records = list(of_condition)
        runs: list[TrendRun] = []
        by_task: dict[tuple[str, str], dict[int, TaskPoint]] = {}
        for index, ((_, _, name, created_at), of_run) in enumerate(
            groupby(records, key=lambda row: row[:4])
        ):
            task_rows = list(of_run)
            overall = rate(sum(r[7] for r in task_rows), sum(r[6] for r in task_rows))
            runs.append(TrendRun(name=name, created_at=created_at, overall=overall))
            for *_, layer, task, scored, passed, outcome, errors in task_rows:
                point = TaskPoint(
                    run=name, outcome=outcome, rate=rate(passed, scored), errors=errors
                )
                by_task.setdefault((layer, task), {})[index] = point
        tasks = []
        for (layer, task), points_by_run in sorted(by_task.items()):
            points = [points_by_run.get(index) for index in range(len(runs))]
            mark, since, now = classify(points)
            tasks.append(
                TaskTrend(
                    task_name=task, layer=layer, points=points, mark=mark, since=since, now=now
                )
            )
        conditions.append(ConditionTrend(condition=condition, runs=runs, tasks=tasks))
    return Trend(conditions=conditions)
