"""The trend section of report.html (several runs of one condition), and the page of
`orchestra trend --html OUT`.

report.html gets the section when its runs (or lone jobs) number two or more for a condition;
the runs are read again through the results database in memory, ordered by start time.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from orchestra.documents.report import ReportDocument
from orchestra.jobs.run import run_of
from orchestra.report.html.style import STYLE, page_head
from orchestra.report.trend.svg import overall_chart, task_sparklines
from orchestra.report.trend.text import run_lines
from orchestra.results.database import open_sources
from orchestra.results.trend import ConditionTrend, Trend, read_trend

#: No script at all on the trend page: only the inline style.
TREND_PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'"

TREND_STYLE = """
.trend-legend { font: 12px/1.5 ui-monospace, monospace; color: var(--muted); margin: 4px 0 10px;
                padding: 0; list-style: none; white-space: pre; }
.trend-scroll { overflow-x: auto; }
"""


def _condition_section(trend: ConditionTrend) -> str:
    runs = "".join(f"<li>{escape(line)}</li>" for line in run_lines(trend))
    return (
        f'<section class="block trend"><h2>Trend: {escape(trend.condition)}</h2>'
        f'<p class="sub">Pass rate per run (oldest left) with 95% Wilson intervals; below, '
        f"each task per run: green passed, red failed, amber mixed, grey not scored.</p>"
        f'<ul class="trend-legend">{runs}</ul>'
        f'<div class="trend-scroll">{overall_chart(trend)}</div>'
        f'<div class="trend-scroll">{task_sparklines(trend)}</div></section>'
    )


def trend_sections(trend: Trend) -> str:
    """A section per condition with two runs or more ("" when none has)."""
    sections = "".join(_condition_section(c) for c in trend.conditions if len(c.runs) > 1)
    return f"<style>{TREND_STYLE}</style>{sections}" if sections else ""


def report_trend_section(report: ReportDocument) -> str:
    """The trend of the report's runs: "" unless two runs or more share a condition."""
    units: dict[Path, None] = {}
    for job in report.jobs:
        path = Path(job.path)
        run = run_of(path)
        units[run.root if run is not None else path] = None
    if len(units) < 2:
        return ""
    with_runs = [unit for unit in units if unit.is_dir()]
    connection = open_sources(with_runs)
    try:
        return trend_sections(read_trend(connection))
    finally:
        connection.close()


def trend_page(trend: Trend) -> str:
    conditions = ", ".join(c.condition for c in trend.conditions)
    body = trend_sections(trend) or '<p class="note">Fewer than two runs of any condition.</p>'
    head = page_head(f"Buzz Orchestra trend: {conditions}", STYLE, TREND_PAGE_POLICY)
    return f"""{head}<header class="page"><h1>Buzz Orchestra trend</h1>
<div class="sub">{escape(conditions)}</div></header>
<main>
{body}
</main>
</body>
</html>
"""
