"""The error bars of report.html and the leaderboard page (docs/statistics.md): inline SVG, no script.

A bar is the 0-1 scale as a grey track, the 95 % interval as a blue band and the estimate as a
dark tick, with the numbers beside it, so a reader sees at a glance how little ten tasks say.
"""

from __future__ import annotations

from html import escape

from orchestra.documents.summary import Estimate, GroupSummary, Interval, TaskSummary
from orchestra.plural import plural
from orchestra.report.text.summary import (
    interval_text,
    largest_k,
    rate_text,
    value_interval_text,
)

BAR_STYLE = """
svg.bar { vertical-align: middle; margin-right: 6px; }
svg.bar .track { fill: #eaeef2; }
svg.bar .band { fill: #9ec5fe; }
svg.bar .point { fill: #0b3d91; }
td.ci { white-space: nowrap; font-variant-numeric: tabular-nums; }
td.ci .txt { color: var(--muted, #656d76); font-size: 12px; }
table.summary td.ci .txt, table.summary td.pass-k .txt { display: block; }
table.summary td.ci .v { display: inline-block; min-width: 2.4em; }
table.summary td.pass-k .txt { white-space: normal; }
table.estimates { width: auto; }
details.estimates { margin: 10px 0; }
details.estimates summary { cursor: pointer; font-weight: 600; }
table.estimates td, table.estimates th { padding: 3px 10px 3px 0; text-align: left; }
"""

WIDTH = 100


def error_bar(value: float | None, interval: Interval | None) -> str:
    """An inline SVG bar of `value` with its interval ("" when there is neither)."""
    if value is None and interval is None:
        return ""
    parts = ['<rect class="track" x="0" y="4" width="100" height="4" rx="2"/>']
    title = []
    if interval is not None:
        low, high = interval.low * WIDTH, interval.high * WIDTH
        parts.append(
            f'<rect class="band" x="{low:.1f}" y="1" width="{max(high - low, 0.8):.1f}" '
            'height="10" rx="2"/>'
        )
        title.append(f"95% interval {interval_text(interval)} ({interval.method})")
    if value is not None:
        parts.append(
            f'<rect class="point" x="{value * WIDTH - 1:.1f}" y="0" width="2" height="12"/>'
        )
        title.insert(0, f"{value:.2f}")
    return (
        f'<svg class="bar" width="56" height="12" viewBox="-2 0 104 12" '
        'preserveAspectRatio="none" role="img">'
        f"<title>{escape(', '.join(title))}</title>{''.join(parts)}</svg>"
    )


def interval_cell(value: float | None, interval: Interval | None) -> str:
    """A pass rate, its error bar and its interval, one above the other ("—": not scored)."""
    if value is None:
        return '<td class="ci">—</td>'
    return (
        f'<td class="ci"><span class="v">{value:.2f}</span> {error_bar(value, interval)}'
        f'<span class="txt">{interval_text(interval)}</span></td>'
    )


def estimate_cell(estimate: Estimate | None) -> str:
    if estimate is None:
        return '<td class="ci">—</td>'
    return (
        f'<td class="ci">{error_bar(estimate.value, estimate.interval)}'
        f"{estimate.value:.2f} "
        f'<span class="txt">{interval_text(estimate.interval)}</span></td>'
    )


def task_pass_hat_k(task: TaskSummary) -> str:
    """pass^k at the task's largest k, as a line under pass@k ("" with no k)."""
    largest = largest_k(task.pass_hat_ks)
    if largest is None:
        return ""
    k, value = largest
    return f'<span class="txt">pass^{k} {rate_text(value)}</span>'


def _largest_k(estimates: dict[int, Estimate], label: str) -> str:
    largest = largest_k(estimates)
    if largest is None:
        return ""
    k, estimate = largest
    return f'<span class="txt">{label}{k} {value_interval_text(estimate)}</span>'


def group_pass_hat_k(group: GroupSummary) -> str:
    """The mean of pass^k over tasks with its interval, as a line under pass@k."""
    return _largest_k(group.pass_hat_ks, "pass^")


def condition_pass_at_k(totals: GroupSummary) -> str:
    """The condition's pass@k at its largest k over the tasks that reach it ("—" with none):
    the layers may use different k, whose plain mean would mean nothing."""
    return _largest_k(totals.pass_at_ks, "pass@") or "—"


def estimates_block(totals: GroupSummary) -> str:
    """The condition's figures over tasks: the mean pass rate, pass@k and pass^k for each k,
    each with its interval, and the flaky tasks."""
    rows = [("mean pass rate over tasks", totals.task_mean)]
    for estimates, label in ((totals.pass_at_ks, "pass@{k}"), (totals.pass_hat_ks, "pass^{k}")):
        for k, estimate in sorted(estimates.items()):
            rows.append((label.format(k=k), estimate))
    if all(estimate is None for _, estimate in rows):
        return ""
    body = "".join(
        f"<tr><td>{escape(label)}</td>{estimate_cell(estimate)}"
        f"<td>{'' if estimate is None else plural(estimate.n_tasks, 'task')}</td></tr>"
        for label, estimate in rows
    )
    flaky = totals.flaky_tasks
    flaky_line = (
        f"<p>Flaky (passed some attempts, not all): {escape(', '.join(flaky))}</p>" if flaky else ""
    )
    mean = totals.task_mean
    headline = "" if mean is None else f": mean pass rate {value_interval_text(mean)}"
    flaky_count = f", {plural(len(flaky), 'flaky task')}" if flaky else ""
    return (
        f'<details class="estimates"><summary>Over tasks{headline}{flaky_count} '
        "(95% intervals, tasks as units; pass@k and pass^k for each k)</summary>"
        '<table class="estimates"><tr><th>Figure</th><th>Estimate [95% interval]</th>'
        f"<th>Tasks</th></tr>{body}</table>{flaky_line}</details>"
    )
