"""`report.html`: one static, self-contained page (no server, no CDN, one inline script).

Sections: per condition the summary table of §11.2 with error bars, the figures over tasks
(error_bars) and a task × metric heatmap; a filter bar
(filter); an index of every trial; then every trial, collapsible, with its transcript
beside the verifier's verdict (trial). Nothing is wider than the window from 1280 px up:
tables wrap their text instead of scrolling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path

from orchestra.documents.report import PendingSlot, ReportDocument, ReportJob, ReportTrial
from orchestra.documents.summary import ConditionSummary, GroupSummary, TaskSummary
from orchestra.jsonio import write_text_atomic
from orchestra.plural import plural
from orchestra.report.html.agents import agents_table
from orchestra.report.html.error_bars import (
    BAR_STYLE,
    condition_pass_at_k,
    estimates_block,
    group_pass_hat_k,
    interval_cell,
    task_pass_hat_k,
)
from orchestra.report.html.filter import (
    OPEN_TRIALS_UP_TO,
    failing_dimensions,
    filter_bar,
    outcome,
    script_tag,
    trial_attributes,
)
from orchestra.report.html.style import STYLE, page_head
from orchestra.report.html.trajectory import TRAJECTORY_STYLE
from orchestra.report.html.trend import report_trend_section
from orchestra.report.html.trial import render_trial, status_cell, trial_anchor
from orchestra.report.text.floor import floor_cell, floor_lines, layer_floor_text
from orchestra.report.text.liveness import liveness_lines
from orchestra.report.text.summary import (
    ORACLE_NOTE,
    confirmation_text,
    layer_pass_at_k_text,
    rate_text,
    served_models_text,
    shown,
    task_pass_at_k_text,
)


@dataclass(frozen=True)
class PendingRow:
    """A planned trial that never started, with the job it belongs to."""

    slot: PendingSlot
    job: ReportJob

    @property
    def condition(self) -> str:
        return self.job.condition

    @property
    def job_name(self) -> str:
        return self.job.name


def _tokens(summary: TaskSummary | GroupSummary) -> str:
    tokens = summary.tokens
    return f"{tokens.input / 1000:.1f}k / {tokens.output / 1000:.1f}k"


def breakable(name: str) -> str:
    """`name` escaped, with line-break opportunities after `_` and `/` (long metric and task
    names wrap at their parts instead of widening the table)."""
    return escape(name).replace("_", "_<wbr>").replace("/", "/<wbr>")


def _counted(counts: dict[str, int], name_of: Callable[[str], str] = escape) -> str:
    return ", ".join(f"{name_of(name)}×{count}" for name, count in counts.items()) or "-"


def _numbers(
    summary: TaskSummary | GroupSummary,
    pass_at_k: str,
    pass_hat_k: str,
    failing: str,
    floor: str | None = None,
) -> str:
    cells = [
        *(
            f'<td class="num">{count}</td>'
            for count in (
                summary.planned,
                summary.scored,
                summary.errors,
                summary.cancelled,
                summary.not_started,
            )
        ),
        interval_cell(summary.pass_rate, summary.pass_rate_interval),
        f'<td class="num">{rate_text(summary.pass_rate_all)}</td>',
        *([] if floor is None else [f'<td class="num">{escape(floor)}</td>']),
        f'<td class="pass-k">{pass_at_k}{pass_hat_k}</td>',
        f'<td class="failing">{failing}</td>',
        f"<td>{_counted(summary.stop_reasons or {})}</td>",
        f'<td class="num tokens">{_tokens(summary)}</td>',
        f'<td class="num">${summary.cost_usd:.4f}</td>',
    ]
    return "".join(cells)


def _summary_table(condition: ConditionSummary) -> str:
    floored = condition.floor is not None  # the do-nothing floor's column (D114)
    head = "".join(
        f'<th class="{"num" if numeric else ""}">{name}</th>'
        for name, numeric in (
            ("Layer", False), ("Task", False), ("Trials", True), ("Scored", True),
            ("Errors", True), ("Cancelled", True), ("Not started", True),
            ("Pass rate, 95% interval", False), ("Pass rate (all)", True),
            *([("Floor", True)] if floored else []),
            ("pass@k, pass^k", False), ("Failing dimensions", False), ("Stop reasons", False),
            ("Tokens in / out", True), ("Cost", True),
        )
    )  # fmt: skip
    rows = []
    for layer_name, layer in condition.layers.items():
        for task_name, task in layer.tasks.items():
            rows.append(
                f'<tr><td>{escape(layer_name)}</td><td class="task">{breakable(task_name)}</td>'
                + _numbers(
                    task,
                    task_pass_at_k_text(task.pass_at_k),
                    task_pass_hat_k(task),
                    _counted(task.failing_dimensions, breakable),
                    floor_cell(task.floor) if floored else None,
                )
                + "</tr>"
            )
        floor = layer_floor_text(layer) if floored else None
        rows.append(
            f'<tr class="group"><td>{escape(layer_name)}</td>'
            f"<td>(layer, {plural(layer.n_tasks, 'task')})</td>"
            + _numbers(layer, layer_pass_at_k_text(layer), group_pass_hat_k(layer), "", floor)
            + "</tr>"
        )
    rows.append(
        '<tr class="group"><td>all</td><td>(condition)</td>'
        + _numbers(
            condition.totals,
            condition_pass_at_k(condition.totals),
            group_pass_hat_k(condition.totals),
            "",
            rate_text(condition.floor.value) if condition.floor else None,
        )
        + "</tr>"
    )
    return f'<table class="summary"><tr>{head}</tr>{"".join(rows)}</table>'


def _heat_colour(rate: float) -> str:
    # Red (0) through yellow to green (1), light enough to read black text on.
    return f"hsl({round(rate * 120)}, 70%, 78%)"


def _heatmap(condition: ConditionSummary) -> str:
    """One row per task, its metrics as coloured chips that wrap (tasks have metrics of their
    own, so a task × every-metric grid is mostly empty and wider than any window)."""
    tasks = [
        (layer_name, task_name, task)
        for layer_name, layer in condition.layers.items()
        for task_name, task in layer.tasks.items()
    ]
    if not any(task.metrics for _, _, task in tasks):
        return '<p class="empty">No scored trials: nothing to map.</p>'
    rows = []
    for layer_name, task_name, task in tasks:
        chips = "".join(
            f'<span class="chip" style="background:{_heat_colour(metric.rate)}" '
            f'title="{escape(name)}: {metric.passed} of {metric.scored} scored trials held">'
            f"{escape(name)} <b>{metric.passed}/{metric.scored}</b></span>"
            for name, metric in sorted(
                (task.metrics or {}).items(), key=lambda item: (item[0] != "reward", item[0])
            )
        )
        rows.append(
            f"<tr><td>{escape(layer_name)}</td><td>{escape(task_name)}</td>"
            f'<td><div class="chips">{chips or "<span class=empty>not scored</span>"}</div></td></tr>'
        )
    return (
        '<table class="heat">'
        f"<tr><th>Layer</th><th>Task</th><th>Metrics</th></tr>{''.join(rows)}</table>"
    )


def _team(condition: ConditionSummary) -> str:
    """A team's agents over the condition's trials (nothing for a solo roster)."""
    agents = condition.agents
    return f"<h3>Agents</h3>{agents_table(agents)}" if len(agents) > 1 else ""


def _confirmations(condition: ConditionSummary) -> str:
    """Confirmation attempts (beyond k), which the table and its rates leave out."""
    lines = [
        confirmation_text(name, c.attempts, c.scored, c.passes)
        for layer in condition.layers.values()
        for name, task in layer.tasks.items()
        if (c := task.confirmation)
    ]
    return "".join(f'<p class="note">{escape(line)}</p>' for line in lines)


def _condition_block(condition: ConditionSummary) -> str:
    jobs = ", ".join(escape(job.name) for job in condition.jobs)
    models = escape(served_models_text(condition.models))
    errors = "".join(
        f"<li><b>{escape(kind)}</b>: {len(names)} ({escape(', '.join(names))})</li>"
        for kind, names in condition.error_types.items()
    )
    return f"""
<section class="block">
<h2>Condition {escape(condition.condition)}</h2>
<div>manifest <code>{escape(condition.manifest_sha256[:12])}…</code> · jobs: {jobs}{models}</div>
{f'<p class="note">{escape(ORACLE_NOTE)}</p>' if condition.oracle else ""}
{_summary_table(condition)}
{estimates_block(condition.totals)}
{_confirmations(condition)}
{"".join(f'<p class="note">{escape(line)}</p>' for line in floor_lines(condition))}
{"".join(f'<p class="note">{escape(line)}</p>' for line in liveness_lines(condition))}
{_team(condition)}
{f"<h3>Errors and cancellations</h3><ul>{errors}</ul>" if errors else ""}
<h3>Metric heatmap (trials where the metric held / scored trials)</h3>
{_heatmap(condition)}
</section>"""


#: The columns that tell apart the rows of a report combining several conditions or several
#: jobs of one condition: header -> the row's value.
ORIGINS: dict[str, Callable[[ReportTrial | PendingRow], str]] = {
    "Condition": lambda row: row.condition,
    "Job": lambda row: row.job_name,
}


def origin_columns(jobs: list[ReportJob]) -> tuple[str, ...]:
    """The `ORIGINS` columns this report needs: `Condition` when it combines several
    conditions, `Job` when one condition has several jobs; none otherwise."""
    conditions = [job.condition for job in jobs]
    columns = []
    if len(set(conditions)) > 1:
        columns.append("Condition")
    if len(conditions) > len(set(conditions)):
        columns.append("Job")
    return tuple(columns)


def _trial_index(
    trials: list[ReportTrial], pending: list[PendingRow], columns: tuple[str, ...]
) -> str:
    def origin(row: ReportTrial | PendingRow) -> str:
        return "".join(f"<td>{escape(ORIGINS[column](row))}</td>" for column in columns)

    rows = [
        f"<tr {trial_attributes(trial_anchor(i), t.task_name, outcome(t), failing_dimensions(t))}>"
        f"{origin(t)}"
        f'<td><a href="#{trial_anchor(i)}">{escape(t.trial_name)}</a></td>'
        f'<td>{escape(t.task_name)}</td><td class="num">{t.attempt}</td>'
        f'<td>{status_cell(t)}</td><td class="num">{escape(shown(t.reward))}</td>'
        f"<td>{escape(shown(t.stop_reason))}</td>"
        f"<td>{escape(', '.join(failing_dimensions(t)) or '-')}</td>"
        f"<td>{escape(', '.join(t.flags) or '-')}</td></tr>"
        for i, t in enumerate(trials)
    ]
    rows += [
        f"<tr {trial_attributes(f'pending-{i}', row.slot.task_name, 'not run', ())}>"
        f"{origin(row)}"
        f'<td class="empty">not run</td><td>{escape(row.slot.task_name)}</td>'
        f'<td class="num">{row.slot.attempt}</td><td class="status-cancelled">not run</td>'
        "<td></td><td></td><td></td><td></td></tr>"
        for i, row in enumerate(pending)
    ]
    heads = "".join(f"<th>{header}</th>" for header in columns)
    return (
        f'<section class="block"><h2>Trials</h2><table class="index"><tr>{heads}<th>Trial</th>'
        "<th>Task</th>"
        '<th class="num">Attempt</th><th>Outcome</th><th class="num">Reward</th>'
        "<th>Stop reason</th><th>Failing metrics</th>"
        f"<th>Flags</th></tr>{''.join(rows)}</table></section>"
    )


def report_html(report: ReportDocument, out_dir: Path) -> str:
    """The page; file links are relative to `out_dir`, where report.html will be written."""
    jobs = ", ".join(job.name for job in report.jobs)
    trials = report.trials
    body = [_condition_block(condition) for condition in report.conditions]
    body.append(report_trend_section(report))  # several runs of a condition: trend.py
    pending = [PendingRow(slot, job) for job in report.jobs for slot in job.pending]
    body.append(filter_bar(trials, [row.slot for row in pending]))
    body.append(_trial_index(trials, pending, origin_columns(report.jobs)))
    expanded = len(trials) <= OPEN_TRIALS_UP_TO
    body += [render_trial(trial, i, out_dir, expanded=expanded) for i, trial in enumerate(trials)]
    head = page_head(f"Buzz Orchestra report: {jobs}", STYLE + TRAJECTORY_STYLE + BAR_STYLE)
    return f"""{head}<header class="page"><h1>Buzz Orchestra report</h1>
<div class="sub">jobs: {escape(jobs)} · generated {escape(report.generated_at)} ·
{plural(len(trials), "trial")}</div></header>
<main>
{"".join(body)}
</main>
{script_tag()}
</body>
</html>
"""


def write_report_html(report: ReportDocument, path: Path) -> None:
    write_text_atomic(path, report_html(report, path.parent))
