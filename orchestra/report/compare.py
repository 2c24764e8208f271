"""`orchestra compare`: per task and metric, what regressed and what improved between two runs.

A metric's pass count is the number of scored trials in which it held (≥ 1.0 − 1e-9), out of
the scored trials that carried it. A metric regressed when the candidate's pass rate is lower
than the baseline's; each change carries a one-sided Fisher exact p-value (and, with more than
one scored trial on a side, Wilson 95% intervals), and a regression is **significant** when its
p-value is at most α. A task regressed when any of its metrics did. A baseline task is
**missing** from the candidate when the candidate has no scored trial of it (not run, or only
errors and cancellations): nothing shows the contract still holds. The exit code fails (3)
only on a significant regression or a missing task, so sampling noise at small k never fails
a nightly, and a candidate that lost tasks always does.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orchestra.jsonio import read_json_object
from orchestra.plural import plural
from orchestra.report.report_json import build_report
from orchestra.report.stats import fisher_exact_greater, fisher_exact_less, wilson_interval

ALPHA = 0.05
REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
MISSING = "missing"
UNSCORED = "unscored"
#: Fisher p-values are sums of floats; 3/3 → 0/3 must come out exactly at α = 0.05.
P_VALUE_TOLERANCE = 1e-12


class CompareInputError(Exception):
    """A side that is neither a job directory nor a report.json (one-line message)."""


@dataclass(frozen=True)
class Side:
    label: str  # job names, or the report file
    condition: str
    tasks: dict[str, dict[str, Any]]  # task name -> the task summary of report.json


@dataclass
class MetricChange:
    metric: str
    baseline: tuple[int, int] | None  # (passed, scored)
    candidate: tuple[int, int] | None
    change: str  # regression, improvement, unchanged, metric-added, metric-removed
    p_value: float | None = None
    significant: bool = False  # a regression with p-value ≤ α
    baseline_interval: tuple[float, float] | None = None
    candidate_interval: tuple[float, float] | None = None
    note: str = ""


@dataclass
class TaskComparison:
    task: str
    layer: str
    status: str  # regression, improvement, unchanged, unscored, missing, new
    note: str = ""
    metrics: list[MetricChange] = field(default_factory=list)

    @property
    def significant(self) -> bool:
        return any(metric.significant for metric in self.metrics)

    @property
    def lost(self) -> bool:
        """The candidate has no scored trial of a baseline task (§ module docstring)."""
        return self.status in (MISSING, UNSCORED)


def load_side(path: Path) -> Side:
    """A run or job directory (the report is built from it) or a saved report.json."""
    if path.is_file():
        report = read_json_object(path)
        if report is None or not isinstance(report.get("conditions"), list):
            raise CompareInputError(f"{path}: not a report.json (no conditions list)")
        label = str(path)
    elif path.is_dir():
        report = build_report([path])
        label = ", ".join(job["name"] for job in report["jobs"])
    else:
        raise CompareInputError(f"{path}: no such run or job directory or report file")
    try:
        conditions = report["conditions"]
        if len(conditions) != 1:
            raise CompareInputError(
                f"{path}: holds {len(conditions)} conditions; compare one condition per side"
            )
        condition = conditions[0]
        tasks = {
            name: {**task, "layer": layer_name}
            for layer_name, layer in condition["layers"].items()
            for name, task in layer["tasks"].items()
        }
        return Side(label=label, condition=str(condition["condition"]), tasks=tasks)
    except (KeyError, TypeError, AttributeError) as error:
        raise CompareInputError(f"{path}: malformed report ({error!r})") from None


def _fmt_interval(interval: tuple[float, float]) -> str:
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def compare_metric(
    metric: str,
    baseline: dict[str, Any] | None,
    candidate: dict[str, Any] | None,
    alpha: float = ALPHA,
) -> MetricChange:
    if baseline is None or candidate is None:
        counts = baseline or candidate or {}
        return MetricChange(
            metric=metric,
            baseline=(baseline["passed"], baseline["scored"]) if baseline else None,
            candidate=(candidate["passed"], candidate["scored"]) if candidate else None,
            change="metric-removed" if candidate is None else "metric-added",
            note=f"only the {'baseline' if candidate is None else 'candidate'} has this metric "
            f"({counts.get('passed')}/{counts.get('scored')})",
        )
    b_pass, b_n = int(baseline["passed"]), int(baseline["scored"])
    c_pass, c_n = int(candidate["passed"]), int(candidate["scored"])
    b_rate, c_rate = b_pass / b_n, c_pass / c_n
    change = REGRESSION if c_rate < b_rate else IMPROVEMENT if c_rate > b_rate else UNCHANGED
    result = MetricChange(metric, (b_pass, b_n), (c_pass, c_n), change)
    intervals = None
    if not (b_n == 1 and c_n == 1):
        intervals = wilson_interval(b_pass, b_n), wilson_interval(c_pass, c_n)
        result.baseline_interval, result.candidate_interval = intervals
    if change == UNCHANGED:
        return result
    test = fisher_exact_less if change == REGRESSION else fisher_exact_greater
    result.p_value = test(c_pass, c_n, b_pass, b_n)
    held = result.p_value <= alpha + P_VALUE_TOLERANCE
    result.significant = change == REGRESSION and held
    verdict = f"significant at α={alpha:g}" if held else f"not significant at α={alpha:g}"
    result.note = f"Fisher one-sided p={result.p_value:.3f} ({verdict})"
    if intervals is None:
        result.note += "; a single attempt on each side: p is never below 0.5"
    else:
        result.note += f"; Wilson 95% {_fmt_interval(intervals[0])} → {_fmt_interval(intervals[1])}"
    return result


def compare_task(
    name: str,
    baseline: dict[str, Any] | None,
    candidate: dict[str, Any] | None,
    alpha: float = ALPHA,
) -> TaskComparison:
    if candidate is None:
        assert baseline is not None
        return TaskComparison(name, baseline["layer"], MISSING, "not run by the candidate")
    if baseline is None:
        return TaskComparison(name, candidate["layer"], "new", "not run by the baseline")
    layer = str(candidate["layer"])
    if baseline["scored"] and not candidate["scored"]:
        return TaskComparison(
            name,
            layer,
            UNSCORED,
            f"the baseline scored {baseline['scored']} trial(s); the candidate none "
            f"({candidate['errors']} error(s), {candidate['cancelled']} cancelled)",
        )
    b_metrics, c_metrics = baseline.get("metrics", {}), candidate.get("metrics", {})
    names = sorted(set(b_metrics) | set(c_metrics), key=lambda m: (m != "reward", m))
    metrics = [compare_metric(m, b_metrics.get(m), c_metrics.get(m), alpha) for m in names]
    changes = {m.change for m in metrics}
    status = (
        REGRESSION
        if REGRESSION in changes
        else IMPROVEMENT
        if IMPROVEMENT in changes
        else UNCHANGED
    )
    return TaskComparison(name, layer, status, metrics=metrics)


def compare_sides(baseline: Side, candidate: Side, alpha: float = ALPHA) -> dict[str, Any]:
    names = sorted(set(baseline.tasks) | set(candidate.tasks))
    tasks = [compare_task(n, baseline.tasks.get(n), candidate.tasks.get(n), alpha) for n in names]
    return {
        "baseline": {"label": baseline.label, "condition": baseline.condition},
        "candidate": {"label": candidate.label, "condition": candidate.condition},
        "alpha": alpha,
        "regressed_tasks": [t.task for t in tasks if t.status == REGRESSION],
        "significant_regressions": [t.task for t in tasks if t.significant],
        "missing_tasks": [t.task for t in tasks if t.lost],
        "improved_tasks": [t.task for t in tasks if t.status == IMPROVEMENT],
        "tasks": [asdict(t) for t in tasks],
    }


def compare_paths(baseline: Path, candidate: Path, alpha: float = ALPHA) -> dict[str, Any]:
    sides = load_side(baseline), load_side(candidate)
    try:
        return compare_sides(*sides, alpha=alpha)
    except (KeyError, TypeError, ValueError) as error:
        # Job directories always give well-formed task summaries; a hand-edited report.json may not.
        raise CompareInputError(f"malformed report: task summary lacks {error!r}") from None


def exit_code(comparison: dict[str, Any]) -> int:
    """3 on a significant regression or a baseline task missing from the candidate, else 0."""
    return 3 if comparison["significant_regressions"] or comparison["missing_tasks"] else 0


# --- output formats ----------------------------------------------------------------------------


def _counts(value: list[int] | tuple[int, int] | None) -> str:
    return "—" if value is None else f"{value[0]}/{value[1]}"


def _changed_metrics(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in task["metrics"] if m["change"] != UNCHANGED]


def _headline(comparison: dict[str, Any]) -> str:
    statuses = [t["status"] for t in comparison["tasks"]]
    parts = [
        f"{plural(len(comparison['regressed_tasks']), 'task')} regressed "
        f"({len(comparison['significant_regressions'])} significant at "
        f"α={comparison['alpha']:g})",
        f"{statuses.count(IMPROVEMENT)} improved",
        f"{statuses.count(UNCHANGED)} unchanged",
    ]
    parts += [f"{statuses.count(s)} {s}" for s in (UNSCORED, MISSING, "new") if s in statuses]
    return ", ".join(parts)


def verdict(comparison: dict[str, Any]) -> str:
    """Why the exit code is what it is, naming the tasks that make it fail."""
    regressions, missing = comparison["significant_regressions"], comparison["missing_tasks"]
    failing = [
        f"{what}: {', '.join(tasks)}"
        for what, tasks in (
            (plural(len(regressions), "significant regression"), regressions),
            (f"{plural(len(missing), 'task')} missing from the candidate", missing),
        )
        if tasks
    ]
    if failing:
        return "exit 3: " + "; ".join(failing)
    return (
        f"exit 0: no regression significant at α={comparison['alpha']:g} "
        "and no baseline task missing from the candidate"
    )


def _sides_lines(comparison: dict[str, Any]) -> list[str]:
    lines = [
        f"{role}: {comparison[role]['label']} (condition {comparison[role]['condition']})"
        for role in ("baseline", "candidate")
    ]
    if comparison["baseline"]["condition"] != comparison["candidate"]["condition"]:
        lines.append("note: the two sides ran different conditions")
    return lines


def format_text(comparison: dict[str, Any]) -> str:
    lines = _sides_lines(comparison)
    for task in comparison["tasks"]:
        if task["status"] == UNCHANGED:
            continue
        lines.append(
            f"{task['status'].upper():<12} {task['task']} ({task['layer']})"
            + (f": {task['note']}" if task["note"] else "")
        )
        for metric in _changed_metrics(task):
            lines.append(
                f"    {metric['change']:<14} {metric['metric']}: "
                f"{_counts(metric['baseline'])} → {_counts(metric['candidate'])}"
                + (f"  ({metric['note']})" if metric["note"] else "")
            )
    lines.append(f"result: {_headline(comparison)}")
    lines.append(verdict(comparison))
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def format_markdown(comparison: dict[str, Any]) -> str:
    lines = ["## Benchmark comparison", ""]
    lines += [f"- {_md(line)}" for line in _sides_lines(comparison)]
    lines += [f"- **result: {_md(_headline(comparison))}**"]
    lines += [f"- **{_md(verdict(comparison))}**", ""]
    lines += [
        "| Task | Layer | Status | Metric | Baseline | Candidate | Note |",
        "|---|---|---|---|---|---|---|",
    ]
    for task in comparison["tasks"]:
        metrics = _changed_metrics(task)
        if not metrics:
            lines.append(
                f"| {_md(task['task'])} | {task['layer']} | {task['status']} | | | | {_md(task['note'])} |"
            )
        for metric in metrics:
            lines.append(
                f"| {_md(task['task'])} | {task['layer']} | {task['status']} | {_md(metric['metric'])} "
                f"| {_counts(metric['baseline'])} | {_counts(metric['candidate'])} | {_md(metric['note'])} |"
            )
    return "\n".join(lines) + "\n"


def format_json(comparison: dict[str, Any]) -> str:
    return json.dumps(comparison, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


FORMATTERS = {"text": format_text, "json": format_json, "markdown": format_markdown}
