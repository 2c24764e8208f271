"""`report.html`: one static, self-contained page (no server, no CDN, no script).

Sections: per condition the summary table of §11.2 and a task × metric heatmap; an index of
every trial; then every trial with its transcript beside the verifier's verdict (html_trial).
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from orchestra.jsonio import write_text_atomic
from orchestra.plural import plural
from orchestra.report.html_style import CONTENT_SECURITY_POLICY, STYLE
from orchestra.report.html_trajectory import TRAJECTORY_STYLE
from orchestra.report.html_trial import render_trial, status_cell, trial_anchor
from orchestra.report.render import ORACLE_NOTE, pass_at_k_text, rate_text


def _tokens(summary: dict[str, Any]) -> str:
    tokens = summary["tokens"]
    return f"{tokens['input'] / 1000:.1f}k / {tokens['output'] / 1000:.1f}k"


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{escape(name)}×{count}" for name, count in counts.items()) or "-"


def _numbers(summary: dict[str, Any], pass_at_k: str, failing: str) -> str:
    cells = [
        *(
            f'<td class="num">{summary[key]}</td>'
            for key in ("planned", "scored", "errors", "cancelled", "not_started")
        ),
        f'<td class="num">{rate_text(summary["pass_rate"])}</td>',
        f'<td class="num">{rate_text(summary["pass_rate_all"])}</td>',
        f"<td>{pass_at_k}</td>",
        f"<td>{failing}</td>",
        f"<td>{_counted(summary.get('stop_reasons', {}))}</td>",
        f'<td class="num">{_tokens(summary)}</td>',
        f'<td class="num">${summary["cost_usd"]:.4f}</td>',
    ]
    return "".join(cells)


def _layer_pass_at_k(layer: dict[str, Any]) -> str:
    value = layer["pass_at_k"]
    if value is None:
        return "—"
    ks = [task["pass_at_k"]["k"] for task in layer["tasks"].values() if task["pass_at_k"]]
    return pass_at_k_text(value["value"], ks, value["n_tasks"])


def _summary_table(condition: dict[str, Any]) -> str:
    head = "".join(
        f'<th class="{"num" if numeric else ""}">{name}</th>'
        for name, numeric in (
            ("Layer", False), ("Task", False), ("Trials", True), ("Scored", True),
            ("Errors", True), ("Cancelled", True), ("Not started", True),
            ("Pass rate", True), ("Pass rate (all)", True),
            ("pass@k", False), ("Failing dimensions", False), ("Stop reasons", False),
            ("Tokens in / out", True), ("Cost", True),
        )
    )  # fmt: skip
    rows = []
    for layer_name, layer in condition["layers"].items():
        for task_name, task in layer["tasks"].items():
            pass_k = task["pass_at_k"]
            rows.append(
                f"<tr><td>{escape(layer_name)}</td><td>{escape(task_name)}</td>"
                + _numbers(
                    task,
                    "incomplete"
                    if pass_k is None
                    else pass_at_k_text(pass_k["value"], [pass_k["k"]]),
                    _counted(task["failing_dimensions"]),
                )
                + "</tr>"
            )
        rows.append(
            f'<tr class="group"><td>{escape(layer_name)}</td>'
            f"<td>(layer, {plural(layer['n_tasks'], 'task')})</td>"
            + _numbers(layer, _layer_pass_at_k(layer), "")
            + "</tr>"
        )
    rows.append(
        '<tr class="group"><td>all</td><td>(condition)</td>'
        + _numbers(condition["totals"], "—", "")
        + "</tr>"
    )
    return (
        f'<div class="scroll"><table class="summary"><tr>{head}</tr>{"".join(rows)}</table></div>'
    )


def _heat_colour(rate: float) -> str:
    # Red (0) through yellow to green (1), light enough to read black text on.
    return f"hsl({round(rate * 120)}, 70%, 78%)"


def _heatmap(condition: dict[str, Any]) -> str:
    tasks = [
        (layer_name, task_name, task)
        for layer_name, layer in condition["layers"].items()
        for task_name, task in layer["tasks"].items()
    ]
    names = sorted(
        {name for _, _, task in tasks for name in task.get("metrics", {})},
        key=lambda name: (name != "reward", name),
    )
    if not names:
        return '<p class="empty">No scored trials: nothing to map.</p>'
    head = "".join(f'<th class="metric">{escape(name)}</th>' for name in names)
    rows = []
    for layer_name, task_name, task in tasks:
        cells = []
        for name in names:
            metric = task.get("metrics", {}).get(name)
            if metric is None:
                cells.append('<td class="cell empty">—</td>')
                continue
            cells.append(
                f'<td class="cell" style="background:{_heat_colour(metric["rate"])}" '
                f'title="{escape(name)}: {metric["passed"]} of {metric["scored"]} scored trials held">'
                f"{metric['passed']}/{metric['scored']}</td>"
            )
        rows.append(
            f"<tr><td>{escape(layer_name)}</td><td>{escape(task_name)}</td>{''.join(cells)}</tr>"
        )
    return (
        '<div class="scroll"><table class="heat">'
        f"<tr><th>Layer</th><th>Task</th>{head}</tr>{''.join(rows)}</table></div>"
    )


def _condition_block(condition: dict[str, Any]) -> str:
    jobs = ", ".join(escape(job["name"]) for job in condition["jobs"])
    errors = "".join(
        f"<li><b>{escape(kind)}</b>: {len(names)} ({escape(', '.join(names))})</li>"
        for kind, names in condition["error_types"].items()
    )
    return f"""
<section class="block">
<h2>Condition {escape(condition["condition"])}</h2>
<div>manifest <code>{escape(condition["manifest_sha256"][:12])}…</code> · jobs: {jobs}</div>
{f'<p class="note">{escape(ORACLE_NOTE)}</p>' if condition.get("oracle") else ""}
{_summary_table(condition)}
{f"<h3>Errors and cancellations</h3><ul>{errors}</ul>" if errors else ""}
<h3>Metric heatmap (trials where the metric held / scored trials)</h3>
{_heatmap(condition)}
</section>"""


def _trial_index(trials: list[dict[str, Any]], pending: list[dict[str, Any]]) -> str:
    rows = [
        f'<tr><td><a href="#{trial_anchor(i)}">{escape(str(t["trial_name"]))}</a></td>'
        f'<td>{escape(str(t["task_name"]))}</td><td class="num">{escape(str(t["attempt"]))}</td>'
        f'<td>{status_cell(t)}</td><td class="num">{escape(str(t["reward"]))}</td>'
        f"<td>{escape(str(t['stop_reason']))}</td>"
        f"<td>{escape(', '.join(m for m in t['failing_metrics'] if m != 'reward') or '-')}</td></tr>"
        for i, t in enumerate(trials)
    ]
    rows += [
        f'<tr><td class="empty">not run</td><td>{escape(str(slot["task_name"]))}</td>'
        f'<td class="num">{slot["attempt"]}</td><td class="status-cancelled">not run</td>'
        "<td></td><td></td><td></td></tr>"
        for slot in pending
    ]
    return (
        '<section class="block"><h2>Trials</h2><table class="index"><tr><th>Trial</th><th>Task</th>'
        '<th class="num">Attempt</th><th>Outcome</th><th class="num">Reward</th>'
        f"<th>Stop reason</th><th>Failing metrics</th></tr>{''.join(rows)}</table></section>"
    )


def report_html(report: dict[str, Any], out_dir: Path) -> str:
    """The page; file links are relative to `out_dir`, where report.html will be written."""
    jobs = ", ".join(job["name"] for job in report["jobs"])
    trials = report["trials"]
    body = [_condition_block(condition) for condition in report["conditions"]]
    pending = [slot for job in report["jobs"] for slot in job["pending"]]
    body.append(_trial_index(trials, pending))
    body += [render_trial(trial, i, out_dir) for i, trial in enumerate(trials)]
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Buzz Orchestra report: {escape(jobs)}</title>
<style>{STYLE}{TRAJECTORY_STYLE}</style>
</head>
<body>
<header class="page"><h1>Buzz Orchestra report</h1>
<div class="sub">jobs: {escape(jobs)} · generated {escape(report["generated_at"])} ·
{plural(len(trials), "trial")}</div></header>
<main>
{"".join(body)}
</main>
</body>
</html>
"""


def write_report_html(report: dict[str, Any], path: Path) -> None:
    write_text_atomic(path, report_html(report, path.parent))
