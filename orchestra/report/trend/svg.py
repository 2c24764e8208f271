"""The trend chart of report.html: static inline SVG drawn here (the page runs no chart
library and loads nothing).

Two drawings per condition: the pass rate of every run (oldest left) with its 95 % interval as
a bar, and one sparkline row per task (a dot per run at its pass rate, coloured by outcome, the
task's mark at the end). Only presentation attributes are used, so the page's
Content-Security-Policy needs nothing new. Every text is escaped.
"""

from __future__ import annotations

from html import escape

from orchestra.report.trend.text import mark_text, run_label
from orchestra.results.trend import ConditionTrend, Rate, TaskTrend

OUTCOME_COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "mixed": "#bf8700", "none": "#8c959f"}
MARK_COLOURS = {"flaky": "#bf8700", "flipped": "#cf222e", "stable": "#57606a"}
FONT = 'font-family="system-ui, sans-serif"'

CHART_HEIGHT = 200
PLOT_TOP, PLOT_LEFT, PLOT_BOTTOM = 16, 48, 150
RUN_STEP = 72  # horizontal room per run
ROW_HEIGHT = 24
NAME_WIDTH = 300
SPARK_STEP = 22
MARK_WIDTH = 160
TASK_NAME_CHARS = 44


def _y(rate: float, top: float, bottom: float) -> float:
    return bottom - rate * (bottom - top)


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def _interval_title(label: str, rate: Rate) -> str:
    if rate.pass_rate is None or rate.low is None or rate.high is None:
        return f"{label}: nothing scored"
    return (
        f"{label}: {rate.passed}/{rate.scored} passed, {rate.pass_rate:.2f} "
        f"(95% CI {rate.low:.2f}–{rate.high:.2f})"
    )


def overall_chart(trend: ConditionTrend) -> str:
    """Pass rate per run with interval bars, y from 0 to 1."""
    width = PLOT_LEFT + RUN_STEP * len(trend.runs) + 16
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="trend-chart" width="{width}" '
        f'height="{CHART_HEIGHT}" viewBox="0 0 {width} {CHART_HEIGHT}" role="img" '
        f'aria-label="pass rate per run of {escape(trend.condition)}">'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        tick_y = _fmt(_y(tick, PLOT_TOP, PLOT_BOTTOM))
        parts.append(
            f'<line x1="{PLOT_LEFT}" y1="{tick_y}" x2="{width - 8}" y2="{tick_y}" '
            'stroke="#d0d7de" stroke-width="1"/>'
            f'<text x="{PLOT_LEFT - 6}" y="{tick_y}" dy="4" text-anchor="end" font-size="11" '
            f'fill="#57606a" {FONT}>{tick:.2f}</text>'
        )
    line: list[str] = []
    for index, run in enumerate(trend.runs):
        x = PLOT_LEFT + RUN_STEP * index + RUN_STEP / 2
        rate = run.overall
        label = f"{run_label(index)} {run.name} ({run.created_at[:16].replace('T', ' ')})"
        parts.append(f"<g><title>{escape(_interval_title(label, rate))}</title>")
        if rate.pass_rate is not None and rate.low is not None and rate.high is not None:
            low, high = _y(rate.low, PLOT_TOP, PLOT_BOTTOM), _y(rate.high, PLOT_TOP, PLOT_BOTTOM)
            y = _y(rate.pass_rate, PLOT_TOP, PLOT_BOTTOM)
            line.append(f"{_fmt(x)},{_fmt(y)}")
            parts.append(
                f'<line x1="{_fmt(x)}" y1="{_fmt(low)}" x2="{_fmt(x)}" y2="{_fmt(high)}" '
                'stroke="#0969da" stroke-width="2"/>'
                + "".join(
                    f'<line x1="{_fmt(x - 6)}" y1="{_fmt(cap)}" x2="{_fmt(x + 6)}" '
                    f'y2="{_fmt(cap)}" stroke="#0969da" stroke-width="2"/>'
                    for cap in (low, high)
                )
                + f'<circle cx="{_fmt(x)}" cy="{_fmt(y)}" r="4" fill="#0969da"/>'
            )
        parts.append(
            f'<text x="{_fmt(x)}" y="{PLOT_BOTTOM + 18}" text-anchor="middle" font-size="12" '
            f'fill="#1f2328" {FONT}>{run_label(index)}</text>'
            f'<text x="{_fmt(x)}" y="{PLOT_BOTTOM + 33}" text-anchor="middle" font-size="10" '
            f'fill="#57606a" {FONT}>{escape(run.created_at[5:10])}</text></g>'
        )
    if len(line) > 1:
        parts.insert(
            1,
            f'<polyline points="{" ".join(line)}" fill="none" stroke="#54aeff" '
            'stroke-width="1.5"/>',
        )
    parts.append("</svg>")
    return "".join(parts)


def _short(name: str) -> str:
    return name if len(name) <= TASK_NAME_CHARS else name[: TASK_NAME_CHARS - 1] + "…"


def _spark_row(task: TaskTrend, names: list[str], top: float) -> str:
    bottom = top + ROW_HEIGHT - 5
    inner_top = top + 5
    parts = [
        f"<g><title>{escape(task.task_name)}</title>"
        f'<text x="0" y="{_fmt(top + 16)}" font-size="12" fill="#1f2328" {FONT}>'
        f"{escape(_short(task.task_name))}</text>"
    ]
    points = []
    for index, point in enumerate(task.points):
        x = NAME_WIDTH + SPARK_STEP * index + SPARK_STEP / 2
        if point is None or point.rate.pass_rate is None:
            parts.append(
                f'<circle cx="{_fmt(x)}" cy="{_fmt((inner_top + bottom) / 2)}" r="3" fill="none" '
                'stroke="#8c959f">'
                f"<title>{escape(run_label(index))}: not scored</title></circle>"
            )
            continue
        y = _y(point.rate.pass_rate, inner_top, bottom)
        points.append(f"{_fmt(x)},{_fmt(y)}")
        title = _interval_title(run_label(index), point.rate)
        parts.append(
            f'<circle cx="{_fmt(x)}" cy="{_fmt(y)}" r="3.5" '
            f'fill="{OUTCOME_COLOURS[point.outcome]}"><title>{escape(title)}</title></circle>'
        )
    if len(points) > 1:
        parts.insert(
            1,
            f'<polyline points="{" ".join(points)}" fill="none" stroke="#afb8c1" '
            'stroke-width="1"/>',
        )
    mark_x = NAME_WIDTH + SPARK_STEP * len(task.points) + 10
    parts.append(
        f'<text x="{mark_x}" y="{_fmt(top + 16)}" font-size="12" '
        f'fill="{MARK_COLOURS[task.mark]}" {FONT}>{escape(mark_text(task, names))}</text></g>'
    )
    return "".join(parts)


def task_sparklines(trend: ConditionTrend) -> str:
    """One row per task: its pass rate in each run as a dot on a small line."""
    names = [run.name for run in trend.runs]
    width = NAME_WIDTH + SPARK_STEP * len(trend.runs) + MARK_WIDTH
    height = ROW_HEIGHT * (len(trend.tasks) + 1)
    header = "".join(
        f'<text x="{_fmt(NAME_WIDTH + SPARK_STEP * i + SPARK_STEP / 2)}" y="13" '
        f'text-anchor="middle" font-size="10" fill="#57606a" {FONT}>{run_label(i)}</text>'
        for i in range(len(names))
    )
    rows = "".join(
        _spark_row(task, names, ROW_HEIGHT * (row + 1)) for row, task in enumerate(trend.tasks)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="trend-tasks" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="pass rate per task and run of {escape(trend.condition)}">'
        f"{header}{rows}</svg>"
    )
