"""`orchestra compare`: did the candidate get worse than the baseline, and by how much?

The verdict is the suite's (orchestra.report.stats.paired): tasks scored on both sides are paired,
the mean per-task difference of mean reward gets a paired bootstrap interval and an exact test
(McNemar with one attempt per task on each side, a sign-flip permutation test otherwise), and
a regression significant at α fails the comparison (exit 3). Tasks are not dropped silently:
those not scored on both sides are listed with why, and a baseline task the candidate has no
scored trial of (not run, or only errors and cancellations) also fails it, since nothing shows
the contract still holds; a task the baseline itself did not score (an infrastructure error on
its side) is excluded from the comparison with its reason, never lost. Per task, what changed stays as leads: a one-sided Fisher p-value
of the reward's pass counts, Holm-adjusted over the tasks compared, and the metrics that
flipped (descriptive). A task whose files changed between the sides (another task digest) is
compared and flagged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from orchestra.documents.report import ReportDocument
from orchestra.documents.summary import Interval, MetricCount, TaskSummary
from orchestra.report.compare.document import (
    EXCLUDED,
    IMPROVEMENT,
    MISSING,
    REGRESSION,
    UNCHANGED,
    UNSCORED,
    Comparison,
    Discordant,
    ExcludedTask,
    Lead,
    MetricChange,
    SideRecord,
    SuiteRecord,
    TaskComparison,
)
from orchestra.report.report_json import build_report
from orchestra.report.stats.inference import Bounds, significant, wilson
from orchestra.report.stats.paired import SuiteComparison, TaskPair, compare_suite

ALPHA = 0.05


class CompareInputError(Exception):
    """A side that is neither a job directory nor a report.json (one-line message)."""


@dataclass(frozen=True)
class SideTask:
    layer: str
    summary: TaskSummary


@dataclass(frozen=True)
class Side:
    label: str  # job names, or the report file
    condition: str
    tasks: dict[str, SideTask]  # task name -> its layer and summary in report.json
    digests: dict[str, str] = field(default_factory=dict)  # task name -> its files' digest


def _digests(report: ReportDocument) -> dict[str, str]:
    return {
        task.name: task.digest for job in report.jobs for task in job.planned_tasks if task.digest
    }


def load_side(path: Path) -> Side:
    """A run or job directory (the report is built from it) or a saved report.json, of any
    version (`ReportDocument` reads the older ones); `DocumentError` for a file that is not."""
    if path.is_file():
        report = ReportDocument.load(path)
        label = str(path)
    elif path.is_dir():
        report = build_report([path])
        label = ", ".join(job.name for job in report.jobs)
    else:
        raise CompareInputError(f"{path}: no such run or job directory or report file")
    return side_of_report(report, label, str(path))


def side_of_report(report: ReportDocument, label: str, where: str) -> Side:
    """One side of a comparison: the report's only condition (`where` names it in errors)."""
    if len(report.conditions) != 1:
        raise CompareInputError(
            f"{where}: holds {len(report.conditions)} conditions; compare one condition per side"
        )
    condition = report.conditions[0]
    tasks = {
        name: SideTask(layer_name, task)
        for layer_name, layer in condition.layers.items()
        for name, task in layer.tasks.items()
    }
    return Side(label, condition.condition, tasks, _digests(report))


def _pair(value: Bounds) -> tuple[float, float]:
    return (value.low, value.high)


def compare_metric(
    metric: str, baseline: MetricCount | None, candidate: MetricCount | None
) -> MetricChange:
    if baseline is None or candidate is None:
        counts = baseline or candidate
        return MetricChange(
            metric=metric,
            baseline=(baseline.passed, baseline.scored) if baseline else None,
            candidate=(candidate.passed, candidate.scored) if candidate else None,
            change="metric-removed" if candidate is None else "metric-added",
            note=f"only the {'baseline' if candidate is None else 'candidate'} has this metric "
            f"({counts.passed if counts else None}/{counts.scored if counts else None})",
        )
    b_pass, b_n = baseline.passed, baseline.scored
    c_pass, c_n = candidate.passed, candidate.scored
    b_rate, c_rate = b_pass / b_n, c_pass / c_n
    change = REGRESSION if c_rate < b_rate else IMPROVEMENT if c_rate > b_rate else UNCHANGED
    result = MetricChange(metric, (b_pass, b_n), (c_pass, c_n), change)
    if not (b_n == 1 and c_n == 1):
        result.baseline_interval = _pair(wilson(b_pass, b_n))
        result.candidate_interval = _pair(wilson(c_pass, c_n))
        result.note = (
            f"Wilson 95% {_fmt_interval(result.baseline_interval)} → "
            f"{_fmt_interval(result.candidate_interval)}"
        )
    return result


def _fmt_interval(interval: tuple[float, float]) -> str:
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def _mean(task: TaskSummary) -> float:
    """The mean reward of a task with scored trials (a hand-edited report may lack it)."""
    if task.pass_rate is None:
        raise CompareInputError("malformed report: a scored task has no pass_rate")
    return task.pass_rate


def compare_task(
    name: str, baseline: SideTask | None, candidate: SideTask | None
) -> TaskComparison:
    if candidate is None:
        assert baseline is not None
        return TaskComparison(name, baseline.layer, MISSING, "not run by the candidate")
    if baseline is None:
        return TaskComparison(name, candidate.layer, "new", "not run by the baseline")
    layer = candidate.layer
    before, after = baseline.summary, candidate.summary
    if not before.scored:
        # Nothing to hold the candidate to: an infrastructure error on the baseline's side
        # says nothing about the task, so the task leaves the comparison (shown, not lost).
        return TaskComparison(
            name,
            layer,
            EXCLUDED,
            f"the baseline scored no trial of it ({before.errors} error(s), "
            f"{before.cancelled} cancelled): excluded from the comparison",
        )
    if not after.scored:
        return TaskComparison(
            name,
            layer,
            UNSCORED,
            f"the baseline scored {before.scored} trial(s); the candidate none "
            f"({after.errors} error(s), {after.cancelled} cancelled)",
        )
    b_metrics, c_metrics = before.metrics or {}, after.metrics or {}
    names = sorted(set(b_metrics) | set(c_metrics), key=lambda m: (m != "reward", m))
    metrics = [compare_metric(m, b_metrics.get(m), c_metrics.get(m)) for m in names]
    changes = {m.change for m in metrics}
    status = (
        REGRESSION
        if REGRESSION in changes
        else IMPROVEMENT
        if IMPROVEMENT in changes
        else UNCHANGED
    )
    return TaskComparison(
        name,
        layer,
        status,
        metrics=metrics,
        baseline_mean=_mean(before),
        candidate_mean=_mean(after),
        difference=_mean(after) - _mean(before),
    )


def successes_of(task: TaskSummary) -> int:
    """Scored trials with reward 1.0 (a report written before `successes` existed: the reward
    metric's passes)."""
    if task.successes is not None:
        return task.successes
    reward = (task.metrics or {}).get("reward")
    return 0 if reward is None else reward.passed


def task_pair(name: str, baseline: TaskSummary, candidate: TaskSummary) -> TaskPair:
    return TaskPair(
        task=name,
        baseline_mean=_mean(baseline),
        baseline_n=baseline.scored,
        baseline_passes=successes_of(baseline),
        candidate_mean=_mean(candidate),
        candidate_n=candidate.scored,
        candidate_passes=successes_of(candidate),
    )


def _excluded_reason(task: TaskComparison) -> str:
    return task.note or f"{task.status}"


def suite_record(suite: SuiteComparison) -> SuiteRecord:
    return SuiteRecord(
        n_tasks=suite.n_tasks,
        mean_difference=suite.mean_difference,
        interval=None
        if suite.interval is None
        else Interval.model_validate(asdict(suite.interval)),
        test=suite.test,
        p_value=suite.p_value,
        verdict=suite.verdict,
        discordant=None
        if suite.discordant is None
        else Discordant(baseline_only=suite.discordant[0], candidate_only=suite.discordant[1]),
        detectable_change=suite.detectable.change,
        assumed_sd=suite.detectable.sd,
        power=suite.detectable.text(),
    )


def compare_sides(baseline: Side, candidate: Side, alpha: float = ALPHA) -> Comparison:
    names = sorted(set(baseline.tasks) | set(candidate.tasks))
    tasks = [compare_task(n, baseline.tasks.get(n), candidate.tasks.get(n)) for n in names]
    paired = [t for t in tasks if t.difference is not None]
    suite = compare_suite(
        [
            task_pair(t.task, baseline.tasks[t.task].summary, candidate.tasks[t.task].summary)
            for t in paired
        ],
        alpha,
    )
    for task, raw, adjusted in zip(paired, suite.lead_p_values, suite.lead_adjusted, strict=True):
        task.p_value, task.adjusted_p_value = raw, adjusted
        reward = next((m for m in task.metrics if m.metric == "reward"), None)
        if reward is not None and reward.change != UNCHANGED:
            reward.p_value = raw
            reward.significant = reward.change == REGRESSION and significant(adjusted, alpha)
    for task in tasks:
        before, after = baseline.digests.get(task.task), candidate.digests.get(task.task)
        task.files_changed = before is not None and after is not None and before != after
    return Comparison(
        baseline=SideRecord(label=baseline.label, condition=baseline.condition),
        candidate=SideRecord(label=candidate.label, condition=candidate.condition),
        alpha=alpha,
        verdict=suite.verdict,
        suite=suite_record(suite),
        regressed_tasks=[t.task for t in tasks if t.status == REGRESSION],
        significant_regressions=[t.task for t in tasks if t.significant],
        missing_tasks=[t.task for t in tasks if t.lost],
        improved_tasks=[t.task for t in tasks if t.status == IMPROVEMENT],
        excluded_tasks=[
            ExcludedTask(task=t.task, status=t.status, reason=_excluded_reason(t))
            for t in tasks
            if t.difference is None
        ],
        leads=[
            Lead(
                task=t.task,
                change=t.status,
                difference=t.difference,
                p_value=t.p_value,
                adjusted_p_value=t.adjusted_p_value,
            )
            for t in paired
            if t.status in (REGRESSION, IMPROVEMENT)
        ],
        changed_task_files=[t.task for t in tasks if t.files_changed],
        tasks=tasks,
    )


def compare_paths(baseline: Path, candidate: Path, alpha: float = ALPHA) -> Comparison:
    return compare_sides(load_side(baseline), load_side(candidate), alpha=alpha)


def exit_code(comparison: Comparison) -> int:
    """3 on a significant suite-level regression or a baseline task the candidate lost."""
    return 3 if comparison.verdict == REGRESSION or comparison.missing_tasks else 0
