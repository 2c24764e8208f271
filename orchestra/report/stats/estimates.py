"""Intervals beside every pass rate of a §11 summary, and pass@k / pass^k over tasks (docs/statistics.md).

The §11.1 rates stay exactly as aggregated; this adds, per task, Wilson intervals with the
trials as units, and per layer and condition intervals with the tasks as units (attempts of one
task are not independent), the mean over tasks of the per-task pass rates, and for each k the
mean over tasks of pass@k and pass^k with a bootstrap-over-tasks interval. The report layer
calls it when it prints or writes a summary: the job's `result.json`, written while trials run,
never loads scipy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from orchestra.documents.summary import (
    ConditionSummary,
    Estimate,
    GroupSummary,
    Interval,
    Summary,
    TaskSummary,
)
from orchestra.report.stats.inference import Bounds, mean_interval, ratio_interval, wilson

G = TypeVar("G", bound=GroupSummary)


def _interval(bounds: Bounds | None) -> Interval | None:
    return (
        None if bounds is None else Interval(low=bounds.low, high=bounds.high, method=bounds.method)
    )


def _binary_rewards(task: TaskSummary) -> bool:
    """Every scored reward was 0 or 1 (then the pass rate is successes / scored)."""
    assert task.successes is not None and task.pass_rate is not None
    return abs(task.pass_rate * task.scored - task.successes) < 1e-9


def task_with_intervals(task: TaskSummary) -> TaskSummary:
    if task.successes is None:  # a document written before `successes` existed
        return task
    rate = None
    if task.scored and _binary_rewards(task):
        rate = _interval(wilson(task.successes, task.scored))
    rate_all = _interval(wilson(task.successes, task.planned)) if task.planned else None
    return task.model_copy(update={"pass_rate_interval": rate, "pass_rate_all_interval": rate_all})


def _estimate(values: Sequence[float]) -> Estimate | None:
    if not values:
        return None
    return Estimate(
        value=sum(values) / len(values),
        n_tasks=len(values),
        interval=_interval(mean_interval(values)),
    )


def _per_k(tasks: Sequence[TaskSummary], field: str) -> dict[int, Estimate]:
    ks = sorted({k for task in tasks for k in getattr(task, field)})
    estimates: dict[int, Estimate] = {}
    for k in ks:
        values = [v for task in tasks if (v := getattr(task, field).get(k)) is not None]
        estimate = _estimate(values)
        if estimate is not None:
            estimates[k] = estimate
    return estimates


def group_with_intervals(group: G, tasks: dict[str, TaskSummary]) -> G:
    counted = [t for t in tasks.values() if t.successes is not None]
    rates = [(t.pass_rate, t.scored) for t in counted if t.pass_rate is not None and t.scored]
    all_rates = [(t.successes or 0, t.planned) for t in counted if t.planned]
    return group.model_copy(
        update={
            "pass_rate_interval": _interval(
                ratio_interval([rate * n for rate, n in rates], [n for _, n in rates])
            ),
            "pass_rate_all_interval": _interval(
                ratio_interval([c for c, _ in all_rates], [n for _, n in all_rates])
            ),
            "task_mean": _estimate([rate for rate, _ in rates]),
            "pass_at_ks": _per_k(counted, "pass_at_ks"),
            "pass_hat_ks": _per_k(counted, "pass_hat_ks"),
            "flaky_tasks": sorted(name for name, t in tasks.items() if t.flaky),
        }
    )


def condition_with_intervals(condition: ConditionSummary) -> ConditionSummary:
    layers = {}
    for name, layer in condition.layers.items():
        tasks = {task_name: task_with_intervals(t) for task_name, t in layer.tasks.items()}
        layers[name] = group_with_intervals(layer, tasks).model_copy(update={"tasks": tasks})
    every_task = {n: t for layer in layers.values() for n, t in layer.tasks.items()}
    totals = group_with_intervals(condition.totals, every_task)
    return condition.model_copy(update={"layers": layers, "totals": totals})


def with_intervals(summary: Summary) -> Summary:
    """`summary` with every interval and per-k estimate filled in."""
    return Summary(conditions=[condition_with_intervals(c) for c in summary.conditions])
