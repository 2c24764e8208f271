"""Intervals beside every pass rate of a §11 summary, and pass@k / pass^k over tasks (docs/statistics.md).

The §11.1 rates stay exactly as aggregated; this adds, per task, Wilson intervals with the
trials as units, and per layer and condition clustered intervals over tasks (attempts of one
task are not independent: orchestra.report.stats.clustered), the mean over tasks of the
per-task pass rates with where its uncertainty comes from, and for each k the mean over tasks
of pass@k and pass^k with its interval. The report layer
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
    Uncertainty,
)
from orchestra.report.stats.clustered import ClusteredMean, clustered_mean
from orchestra.report.stats.inference import Bounds, wilson

G = TypeVar("G", bound=GroupSummary)


def _interval(mean: ClusteredMean | None) -> Interval | None:
    return None if mean is None else Interval(low=mean.low, high=mean.high, method="clustered")


def _binary_rewards(task: TaskSummary) -> bool:
    """Every scored reward was 0 or 1 (then the pass rate is successes / scored)."""
    assert task.successes is not None and task.pass_rate is not None
    return abs(task.pass_rate * task.scored - task.successes) < 1e-9


def task_with_intervals(task: TaskSummary) -> TaskSummary:
    if task.successes is None:  # a document written before `successes` existed
        return task
    rate = None
    if task.scored and _binary_rewards(task):
        rate = _wilson(wilson(task.successes, task.scored))
    rate_all = _wilson(wilson(task.successes, task.planned)) if task.planned else None
    return task.model_copy(update={"pass_rate_interval": rate, "pass_rate_all_interval": rate_all})


def _wilson(bounds: Bounds) -> Interval:
    return Interval(low=bounds.low, high=bounds.high, method=bounds.method)


def uncertainty(mean: ClusteredMean) -> Uncertainty:
    between = mean.between
    return Uncertainty(
        between_share=None if between is None or mean.variance == 0 else between / mean.variance,
        design_effect=mean.design_effect,
        effective_n=mean.effective_n,
        attempts=mean.attempts,
        half_width=mean.half_width(),
        twice_attempts=mean.half_width(attempts_factor=2),
        twice_tasks=mean.half_width(tasks_factor=2),
        calibrated=mean.calibrated(),
    )


def _task_mean(rates: Sequence[tuple[float, int]]) -> Estimate | None:
    mean = clustered_mean([rate for rate, _ in rates], [n for _, n in rates])
    if mean is None:
        return None
    return Estimate(
        value=mean.value,
        n_tasks=mean.n_tasks,
        interval=_interval(mean),
        uncertainty=uncertainty(mean),
    )


def _per_k(tasks: Sequence[TaskSummary], field: str) -> dict[int, Estimate]:
    """pass@k and pass^k over tasks: values with no attempt noise of their own to separate,
    each task one observation (Wilson-t on the task count, conservative for any 0..1 value)."""
    ks = sorted({k for task in tasks for k in getattr(task, field)})
    estimates: dict[int, Estimate] = {}
    for k in ks:
        values = [v for task in tasks if (v := getattr(task, field).get(k)) is not None]
        mean = clustered_mean(values)
        if mean is not None:
            estimates[k] = Estimate(
                value=mean.value, n_tasks=mean.n_tasks, interval=_interval(mean)
            )
    return estimates


def _pooled(pairs: Sequence[tuple[float, int]]) -> Interval | None:
    """The interval of a rate pooled over the tasks' attempts (each task weighs its attempts)."""
    return _interval(
        clustered_mean(
            [rate for rate, _ in pairs], [n for _, n in pairs], weights=[n for _, n in pairs]
        )
    )


def group_with_intervals(group: G, tasks: dict[str, TaskSummary]) -> G:
    counted = [t for t in tasks.values() if t.successes is not None]
    rates = [(t.pass_rate, t.scored) for t in counted if t.pass_rate is not None and t.scored]
    all_rates = [((t.successes or 0) / t.planned, t.planned) for t in counted if t.planned]
    return group.model_copy(
        update={
            "pass_rate_interval": _pooled(rates),
            "pass_rate_all_interval": _pooled(all_rates),
            "task_mean": _task_mean(rates),
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
