"""`orchestra compare`: did the candidate get worse than the baseline, and by how much?

The verdict is the suite's (orchestra.report.stats.paired): tasks scored on both sides are
paired, the mean per-task difference of mean reward gets a paired interval and the exact
one-sided permutation test of attempts within tasks (valid for any attempts per side), and a
regression significant at α fails the comparison (exit 3); an improvement is reported, never
a failure. Tasks are not dropped silently:
those not scored on both sides are listed with why, and a baseline task the candidate has no
scored trial of (not run, or only errors and cancellations) also fails it, since nothing shows
the contract still holds; a task the baseline itself did not score (an infrastructure error on
its side) is excluded from the comparison with its reason, never lost. Per task, what changed stays as leads: a one-sided Fisher p-value
of the reward's pass counts, Holm-adjusted over the tasks compared, and the metrics that
flipped (descriptive). A task whose files changed between the sides (another task digest) is
compared and flagged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orchestra.documents.report import PlannedTaskRecord, ReportDocument
from orchestra.documents.summary import Interval, TaskSummary
from orchestra.errors import OrchestraError
from orchestra.report.compare.document import (
    EXCLUDED,
    IMPROVEMENT,
    MISSING,
    REGRESSION,
    UNCHANGED,
    UNSCORED,
    BaselineRecord,
    Comparison,
    DecisionRecord,
    Discordant,
    EvidenceRecord,
    ExcludedTask,
    Lead,
    MetricChange,
    PowerModel,
    SideRecord,
    SuiteRecord,
    TaskComparison,
)
from orchestra.report.report_json import build_report
from orchestra.report.stats.confirm import (
    DEFAULT_RELIABILITY_TARGET,
    NONE,
    Counts,
    Decision,
    TaskEvidence,
    decide,
)
from orchestra.report.stats.inference import Bounds, significant, wilson
from orchestra.report.stats.paired import NO_CHANGE, SuiteComparison, TaskPair, compare_suite
from orchestra.report.stats.power import Detectable

ALPHA = 0.05


class CompareInputError(OrchestraError):
    """A side that is neither a job directory nor a report.json (one-line message)."""


@dataclass(frozen=True)
class SideTask:
    """What a comparison reads of a task on one side: a report's task row or a history's."""

    layer: str
    scored: int
    errors: int
    cancelled: int
    pass_rate: float  # mean reward over the scored trials (0 with none)
    successes: int  # scored trials with reward 1
    metrics: dict[str, tuple[int, int]]  # metric -> (passed, scored)
    confirmation: Counts = NONE  # attempts beyond k: a candidate's confirmation reruns


@dataclass(frozen=True)
class Side:
    label: str  # job names, or the report file
    condition: str
    tasks: dict[str, SideTask]  # task name -> what the comparison reads of it
    digests: dict[str, str] = field(default_factory=dict)  # task name -> its files' digest
    #: task name -> the digest of the `tests/` that graded it (runs recorded before it: none)
    verifier_digests: dict[str, str] = field(default_factory=dict)
    # a history's (orchestra.report.compare_history): the recent runs' confirmation attempts,
    # the tasks that failed a first attempt in them, and what was pooled
    recent: dict[str, Counts] = field(default_factory=dict)
    recent_first_failed: frozenset[str] = frozenset()
    pooled: tuple[str, ...] = ()


def _digests(report: ReportDocument, of: Callable[[PlannedTaskRecord], str]) -> dict[str, str]:
    """Task name -> `of` its planned record (the files' or the verifier's digest), where set."""
    return {task.name: of(task) for job in report.jobs for task in job.planned_tasks if of(task)}


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


def successes_of(task: TaskSummary) -> int:
    """Scored trials with reward 1.0 (a report written before `successes` existed: the reward
    metric's passes)."""
    if task.successes is not None:
        return task.successes
    reward = (task.metrics or {}).get("reward")
    return 0 if reward is None else reward.passed


def side_task(layer: str, task: TaskSummary) -> SideTask:
    confirmation = task.confirmation
    return SideTask(
        layer=layer,
        scored=task.scored,
        errors=task.errors,
        cancelled=task.cancelled,
        pass_rate=task.pass_rate or 0.0,
        successes=successes_of(task),
        metrics={name: (m.passed, m.scored) for name, m in (task.metrics or {}).items()},
        confirmation=NONE
        if confirmation is None
        else Counts(confirmation.passes, confirmation.scored),
    )


def side_of_report(report: ReportDocument, label: str, where: str) -> Side:
    """One side of a comparison: the report's only condition (`where` names it in errors)."""
    if len(report.conditions) != 1:
        raise CompareInputError(
            f"{where}: holds {len(report.conditions)} conditions; compare one condition per side"
        )
    condition = report.conditions[0]
    tasks = {
        name: side_task(layer_name, task)
        for layer_name, layer in condition.layers.items()
        for name, task in layer.tasks.items()
    }
    return Side(
        label,
        condition.condition,
        tasks,
        _digests(report, lambda task: task.digest),
        _digests(report, lambda task: task.verifier_digest),
    )


def _pair(value: Bounds) -> tuple[float, float]:
    return (value.low, value.high)


def compare_metric(
    metric: str, baseline: tuple[int, int] | None, candidate: tuple[int, int] | None
) -> MetricChange:
    if baseline is None or candidate is None:
        passed, scored = baseline or candidate or (None, None)
        return MetricChange(
            metric=metric,
            baseline=baseline,
            candidate=candidate,
            change="metric-removed" if candidate is None else "metric-added",
            note=f"only the {'baseline' if candidate is None else 'candidate'} has this metric "
            f"({passed}/{scored})",
        )
    (b_pass, b_n), (c_pass, c_n) = baseline, candidate
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


def compare_task(
    name: str, baseline: SideTask | None, candidate: SideTask | None
) -> TaskComparison:
    if candidate is None:
        assert baseline is not None
        return TaskComparison(name, baseline.layer, MISSING, "not run by the candidate")
    if baseline is None:
        return TaskComparison(name, candidate.layer, "new", "not run by the baseline")
    layer = candidate.layer
    if not baseline.scored:
        # Nothing to hold the candidate to: an infrastructure error on the baseline's side
        # says nothing about the task, so the task leaves the comparison (shown, not lost).
        return TaskComparison(
            name,
            layer,
            EXCLUDED,
            f"the baseline scored no trial of it ({baseline.errors} error(s), "
            f"{baseline.cancelled} cancelled): excluded from the comparison",
        )
    if not candidate.scored:
        return TaskComparison(
            name,
            layer,
            UNSCORED,
            f"the baseline scored {baseline.scored} trial(s); the candidate none "
            f"({candidate.errors} error(s), {candidate.cancelled} cancelled)",
        )
    b_metrics, c_metrics = baseline.metrics, candidate.metrics
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
        baseline_mean=baseline.pass_rate,
        candidate_mean=candidate.pass_rate,
        difference=candidate.pass_rate - baseline.pass_rate,
    )


def task_pair(name: str, baseline: SideTask, candidate: SideTask) -> TaskPair:
    return TaskPair(
        task=name,
        baseline_mean=baseline.pass_rate,
        baseline_n=baseline.scored,
        baseline_passes=baseline.successes,
        candidate_mean=candidate.pass_rate,
        candidate_n=candidate.scored,
        candidate_passes=candidate.successes,
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
        p_regression=suite.p_regression,
        p_improvement=suite.p_improvement,
        verdict=suite.verdict,
        discordant=None
        if suite.discordant is None
        else Discordant(baseline_only=suite.discordant[0], candidate_only=suite.discordant[1]),
        **_power_fields(suite.detectable),
    )


def _power_fields(detectable: Detectable | None) -> dict[str, Any]:
    if detectable is None:
        return {"detectable_change": None, "power_model": None, "power": None}
    difficulty = detectable.difficulty
    return {
        "detectable_change": detectable.change,
        "power_model": PowerModel(
            mean=difficulty.mean, sd=difficulty.spread, source=difficulty.source
        ),
        "power": detectable.text(),
    }


def _evidence(name: str, baseline: Side, candidate: Side, target: float) -> TaskEvidence:
    before, after = baseline.tasks[name], candidate.tasks[name]
    counts = Counts(before.successes, before.scored)
    return TaskEvidence(
        name,
        counts,
        Counts(after.successes, after.scored),
        after.confirmation + baseline.recent.get(name, NONE),
        name in baseline.recent_first_failed,
    )


def decision_record(decision: Decision) -> DecisionRecord:
    return DecisionRecord(
        alpha=decision.alpha,
        target=decision.target,
        family=decision.family,
        below_target=decision.below_target,
        evidence={
            name: EvidenceRecord.model_validate(asdict(e) | {"screened": e.screened})
            for name, e in decision.evidence.items()
        },
        confirmed_regressions=decision.regressions,
        missed_target=decision.missed_target,
    )


def compare_sides(
    baseline: Side,
    candidate: Side,
    alpha: float = ALPHA,
    *,
    target: float = DEFAULT_RELIABILITY_TARGET,
    fail_below_target: bool = False,
    with_power: bool = True,
) -> Comparison:
    """The comparison document; its `decision` is the one family (orchestra.report.confirm)
    of the suite test and the tasks confirmed by their fresh attempts; `with_power`: with the
    simulated power line (orchestra.report.stats.power; the leaderboard's pairs leave it out)."""
    names = sorted(set(baseline.tasks) | set(candidate.tasks))
    tasks = [compare_task(n, baseline.tasks.get(n), candidate.tasks.get(n)) for n in names]
    paired = [t for t in tasks if t.difference is not None]
    suite = compare_suite(
        [task_pair(t.task, baseline.tasks[t.task], candidate.tasks[t.task]) for t in paired],
        alpha,
        with_power=with_power,
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
        graded = baseline.verifier_digests.get(task.task), candidate.verifier_digests.get(task.task)
        task.verifier_changed = None not in graded and graded[0] != graded[1]
    # the suite test's p in the regression direction (the family tests regressions only)
    suite_p = (suite.p_regression if suite.mean_difference < 0 else 1.0) if paired else None
    decision = decide(
        [_evidence(t.task, baseline, candidate, target) for t in paired],
        suite_p=suite_p,
        alpha=alpha,
        target=target,
    )
    verdict = suite.verdict if suite.verdict != REGRESSION else NO_CHANGE
    return Comparison(
        baseline=BaselineRecord(
            label=baseline.label, condition=baseline.condition, pooled=list(baseline.pooled)
        ),
        candidate=SideRecord(label=candidate.label, condition=candidate.condition),
        alpha=alpha,
        verdict=REGRESSION if decision.suite_regression else verdict,
        decision=decision_record(decision),
        fail_below_target=fail_below_target,
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
        changed_verifiers=[t.task for t in tasks if t.verifier_changed],
        tasks=tasks,
    )


def compare_paths(
    baseline: Path | Side,
    candidate: Path,
    alpha: float = ALPHA,
    *,
    target: float = DEFAULT_RELIABILITY_TARGET,
    fail_below_target: bool = False,
) -> Comparison:
    """`baseline`: a run, job or report.json, or a side already built (a history)."""
    before = baseline if isinstance(baseline, Side) else load_side(baseline)
    return compare_sides(
        before, load_side(candidate), alpha, target=target, fail_below_target=fail_below_target
    )


def exit_code(comparison: Comparison) -> int:
    """3 when the decision's family holds a regression (the suite's or a confirmed task's), a
    baseline task was lost, or (when asked) a confirmed task missed the reliability target."""
    decision = comparison.decision
    failed = comparison.verdict == REGRESSION or decision.confirmed_regressions
    missed = comparison.fail_below_target and decision.missed_target
    return 3 if failed or missed or comparison.missing_tasks else 0
