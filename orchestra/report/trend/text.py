"""`orchestra trend` as text (a table fitted to the terminal) and as markdown.

Runs are numbered oldest first (`#1`, `#2`, …) and listed above the table with their start
time and overall pass rate. A task's row has `passed/scored` per run, the latest run's rate
with its 95 % interval, and its mark (flaky since / fails since / passes since). A narrow
terminal loses the oldest runs first, then the interval (`text.table.fit_table`).
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from orchestra.report.text.table import Column, Row, fit_table
from orchestra.results.trend import ConditionTrend, Rate, TaskPoint, TaskTrend, Trend

DASH = "—"


def run_label(index: int) -> str:
    return f"#{index + 1}"


def fraction_text(point: TaskPoint | None) -> str:
    """`2/3` passed of scored; `err` when the run's only trials of the task were errors."""
    if point is None:
        return DASH
    if not point.rate.scored:
        return "err" if point.errors else "0/0"
    return f"{point.rate.passed}/{point.rate.scored}"


def rate_text(rate: Rate) -> str:
    """`0.67 [0.21–0.94]`; `—` when nothing was scored."""
    if rate.pass_rate is None or rate.low is None or rate.high is None:
        return DASH
    return f"{rate.pass_rate:.2f} [{rate.low:.2f}–{rate.high:.2f}]"


def mark_text(task: TaskTrend, runs: list[str]) -> str:
    """`flaky since #2`, `fails since #3`, `passes since #3`, or "" for a stable task."""
    if task.since is None:
        return ""
    where = run_label(runs.index(task.since))
    if task.mark == "flaky":
        return f"flaky since {where}"
    return f"{'passes' if task.now == 'pass' else 'fails'} since {where}"


def _drop_rank(age: int) -> int:
    """The newest run always stays; the one before it leaves last, the oldest first."""
    return {0: 0, 1: 5, 2: 4}.get(age, 2 if age == 3 else 1)


def _columns(trend: ConditionTrend) -> list[Column]:
    count = len(trend.runs)
    runs = [
        Column(f"run{i}", run_label(i), "right", drop_rank=_drop_rank(count - 1 - i))
        for i in range(count)
    ]
    return [
        *runs,
        Column("latest", "Latest (95% CI)", "left", short_header="Latest", drop_rank=3),
        Column("mark", "Mark", "left"),
    ]


def _rows(trend: ConditionTrend) -> list[Row]:
    names = [run.name for run in trend.runs]
    rows = []
    for task in trend.tasks:
        cells = {f"run{i}": fraction_text(point) for i, point in enumerate(task.points)}
        last = task.points[-1]
        cells["latest"] = rate_text(last.rate) if last is not None else DASH
        cells["mark"] = mark_text(task, names)
        rows.append(Row(task.layer, task.task_name, cells))
    return rows


def run_lines(trend: ConditionTrend) -> list[str]:
    return [
        f"{run_label(i)}  {run.name}  {run.created_at[:16].replace('T', ' ')}  "
        f"{run.overall.passed}/{run.overall.scored} passed  {rate_text(run.overall)}"
        for i, run in enumerate(trend.runs)
    ]


def render_trend(trend: Trend, console: Console, width: int | None) -> None:
    """Each condition's trend, fitted to `width` columns (None: everything, for pipes)."""
    if not trend.conditions:
        console.print(Text("no runs with trials: nothing to trend"))
    for condition in trend.conditions:
        console.print(
            Text.assemble("Condition ", (condition.condition, "bold"), f"  ({_runs(condition)})")
        )
        for line in run_lines(condition):
            console.print(Text(line))
        table = fit_table(_columns(condition), _rows(condition), width)
        for text in table.lines:
            console.print(text, soft_wrap=True)
        if table.dropped:
            hidden = ", ".join(column.header for column in table.dropped)
            console.print(Text(f"not shown at this width: {hidden} (--json has every run)"))
        console.print(Text(_counts_line(condition)))


def _runs(condition: ConditionTrend) -> str:
    count = len(condition.runs)
    return f"{count} run{'s' if count != 1 else ''}, oldest first"


def _counts_line(condition: ConditionTrend) -> str:
    marks = [task.mark for task in condition.tasks]
    return (
        f"tasks: {len(marks)}, flaky {marks.count('flaky')}, flipped {marks.count('flipped')}, "
        f"stable {marks.count('stable')}"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def trend_markdown(trend: Trend) -> str:
    """Every run's `passed/scored` and interval per task, one table per condition."""
    lines = []
    for condition in trend.conditions:
        names = [run.name for run in condition.runs]
        lines += [f"## Trend: {_cell(condition.condition)} ({_runs(condition)})", ""]
        lines += [f"- {_cell(line)}" for line in run_lines(condition)] + [""]
        header = ["Layer", "Task", *(run_label(i) for i in range(len(names))), "Mark"]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for task in condition.tasks:
            cells = [
                DASH if p is None else f"{fraction_text(p)} {rate_text(p.rate)}"
                for p in task.points
            ]
            row = [task.layer, task.task_name, *cells, mark_text(task, names) or "stable"]
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
        lines += ["", _counts_line(condition), ""]
    return "\n".join(lines)
