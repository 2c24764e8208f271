"""The leaderboard as text, markdown, JSON and one static HTML page."""

from __future__ import annotations

import json
from html import escape

from orchestra.documents.summary import Estimate
from orchestra.report.html.error_bars import BAR_STYLE, error_bar
from orchestra.report.html.style import STYLE, page_head
from orchestra.report.leaderboard.board import Entry, Leaderboard
from orchestra.report.text.floor import floor_summary_lines
from orchestra.report.text.summary import rate_text, tokens_text, value_interval_text

#: A matrix cell reads "the row's condition against the column's".
SYMBOLS = {"regression": "▼ worse", "improvement": "▲ better", "no significant change": "= same"}
HEADERS = ("#", "Condition", "Tasks", "Mean over tasks [95%]", "Pass rate", "Floor", "pass^k",
           "Cost", "Tokens in/out", "Mean time")  # fmt: skip


def _estimate(estimate: Estimate | None) -> str:
    return "—" if estimate is None else value_interval_text(estimate)


def _pass_hat(entry: Entry) -> str:
    value = entry.pass_hat_k
    return "—" if value is None else f"{_estimate(value)} (k={value.k})"


def _row(rank: int, entry: Entry) -> list[str]:
    tokens = entry.tokens
    seconds = entry.mean_trial_seconds
    return [
        str(rank),
        entry.label,
        str(entry.n_tasks),
        _estimate(entry.task_mean),
        "—" if entry.pass_rate is None else f"{entry.pass_rate:.2f}",
        rate_text(entry.floor.value) if entry.floor else "—",
        _pass_hat(entry),
        f"${entry.cost_usd:.4f}",
        tokens_text(tokens),
        "—" if seconds is None else f"{seconds:.1f}s",
    ]


def _cell(board: Leaderboard, row: str, column: str) -> str:
    if row == column:
        return "—"
    verdict = board.matrix[row][column]
    return (
        f"{SYMBOLS[verdict.verdict]} (p={verdict.p_value:.3g}, Holm {verdict.adjusted_p_value:.3g})"
    )


def _notes(board: Leaderboard) -> list[str]:
    notes = [
        f"{name}: runs of this name differ in manifest, endpoints (models, prices) or timeout "
        "multiplier; shown apart, never pooled"
        for name in board.shown_apart
    ]
    notes += [
        f"{entry.label}: {line}"
        for entry in board.entries
        if entry.floor is not None
        for line in floor_summary_lines(entry.floor)
    ]
    matrix = (
        "matrix: the row's condition against the column's, paired by task, compare's exact "
        f"test two-sided, Holm-adjusted over the pairs at α={board.alpha:g}"
    )
    return [*notes, matrix]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def format_text(board: Leaderboard) -> str:
    entries = board.entries
    lines = _table([list(HEADERS)] + [_row(i + 1, e) for i, e in enumerate(entries)])
    labels = [e.label for e in entries]
    if len(labels) > 1:
        lines += ["", "pairwise (row vs column):"]
        lines += _table(
            [["", *labels]] + [[r, *(_cell(board, r, c) for c in labels)] for r in labels]
        )
    lines += ["", *(f"note: {n}" for n in _notes(board))]
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def format_markdown(board: Leaderboard) -> str:
    entries = board.entries
    lines = ["## Leaderboard", "", "| " + " | ".join(HEADERS) + " |"]
    lines.append("|" + "---|" * len(HEADERS))
    lines += [
        "| " + " | ".join(_md(c) for c in _row(i + 1, e)) + " |" for i, e in enumerate(entries)
    ]
    labels = [e.label for e in entries]
    if len(labels) > 1:
        lines += ["", "### Pairwise (row vs column)", ""]
        lines.append("| | " + " | ".join(_md(label) for label in labels) + " |")
        lines.append("|---|" + "---|" * len(labels))
        lines += [
            f"| {_md(r)} | " + " | ".join(_cell(board, r, c) for c in labels) + " |" for r in labels
        ]
    lines += ["", *(f"- {_md(n)}" for n in _notes(board))]
    return "\n".join(lines) + "\n"


def format_json(board: Leaderboard) -> str:
    return (
        json.dumps(board.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False)
        + "\n"
    )


def _html_row(rank: int, entry: Entry) -> str:
    cells = _row(rank, entry)
    mean = entry.task_mean
    bar = "" if mean is None else error_bar(mean.value, mean.interval)
    return (
        f"<tr><td class=num>{rank}</td><td>{escape(cells[1])}</td><td class=num>{cells[2]}</td>"
        f'<td class="ci">{bar}{escape(cells[3])}</td>'
        + "".join(f"<td class=num>{escape(c)}</td>" for c in cells[4:])
        + "</tr>"
    )


def format_html(board: Leaderboard) -> str:
    entries = board.entries
    labels = [e.label for e in entries]
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADERS)
    rows = "".join(_html_row(i + 1, e) for i, e in enumerate(entries))
    matrix = ""
    if len(labels) > 1:
        css = {"regression": "bad", "improvement": "ok", "no significant change": "same"}
        body = "".join(
            f"<tr><th>{escape(r)}</th>"
            + "".join(
                "<td>—</td>"
                if r == c
                else f'<td class="{css[board.matrix[r][c].verdict]}">'
                f"{escape(_cell(board, r, c))}</td>"
                for c in labels
            )
            + "</tr>"
            for r in labels
        )
        matrix = (
            "<h2>Pairwise (row vs column)</h2><table class=matrix><tr><th></th>"
            + "".join(f"<th>{escape(label)}</th>" for label in labels)
            + f"</tr>{body}</table>"
        )
    notes = "".join(f"<li>{escape(n)}</li>" for n in _notes(board))
    style = (
        STYLE
        + BAR_STYLE
        + """
table.board td, table.board th, table.matrix td, table.matrix th { padding: 5px 10px; }
table.matrix td.bad { background: #ffebe9; } table.matrix td.ok { background: #dafbe1; }
table.matrix td.same { color: var(--muted); }
table.board svg.bar { width: 140px; }
"""
    )
    return f"""{page_head("Buzz Orchestra leaderboard", style)}<header class="page"><h1>Buzz Orchestra leaderboard</h1>
<div class="sub">{len(entries)} conditions · ranked by the mean pass rate over tasks</div></header>
<main><section class="block">
<table class="board summary"><tr>{head}</tr>{rows}</table>
{matrix}
<ul>{notes}</ul>
</section></main>
</body>
</html>
"""


FORMATTERS = {
    "text": format_text,
    "markdown": format_markdown,
    "json": format_json,
    "html": format_html,
}
