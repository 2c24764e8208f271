"""The report's rough edges: no raw `None` in any rendering, and a combined
report of several jobs or conditions that tells their rows apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser import CHROMIUM, MISSING_REASON, chromium
from jobs_builder import TrialSpec, build_job
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.documents.trial import TokenCounts
from orchestra.report.html.page import report_html
from orchestra.report.report_json import build_report

RAW_NONE = re.compile(r"\bNone\b")


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code in (0, 3), result.stderr
    return result.stdout


def error_job(jobs: Path, name: str = "errors") -> Path:
    return build_job(
        jobs,
        name,
        [
            TrialSpec("user-mention", rewards={"reward": 1.0}),
            TrialSpec(
                "reply-to-thread", status="error", stop_reason=None,
                exception_type="ProviderUnavailable",
            ),
        ],
    )  # fmt: skip


def test_no_raw_none_in_any_rendering_of_an_error_trial(tmp_path: Path) -> None:
    job = error_job(tmp_path / "jobs")
    out = tmp_path / "out"
    invoke("report", str(job), "-o", str(out))
    renderings = {
        "report.html": (out / "report.html").read_text(encoding="utf-8"),
        "junit.xml": (out / "junit.xml").read_text(encoding="utf-8"),
        "summarize": invoke("summarize", str(job)),
        "summarize --csv": invoke("summarize", "--csv", str(job)),
        "compare": invoke("compare", str(job), str(job)),
        "compare markdown": invoke("compare", str(job), str(job), "--format", "markdown"),
    }
    for name, text in renderings.items():
        assert not RAW_NONE.findall(text), (name, [
            text[max(0, m.start() - 80) : m.end() + 20] for m in RAW_NONE.finditer(text)
        ])  # fmt: skip


def test_a_combined_report_names_each_rows_job(tmp_path: Path) -> None:
    first = error_job(tmp_path / "jobs", "night-1")
    second = error_job(tmp_path / "jobs", "night-2")
    html = report_html(build_report([first, second]), tmp_path)
    index = html[html.index("<h2>Trials</h2>") :]
    assert "<th>Job</th>" in index
    assert index.count("<td>night-1</td>") == 2 and index.count("<td>night-2</td>") == 2


def test_a_report_of_one_job_has_no_job_column(tmp_path: Path) -> None:
    html = report_html(build_report([error_job(tmp_path / "jobs")]), tmp_path)
    assert "<th>Job</th>" not in html


#: Marks every word (hyphens and slashes may break) of the agents tables that the browser broke
#: over two lines (a word laid out in more than one box), into the DOM that `--dump-dom` prints.
MEASURE_WORDS = """
<script>
const broken = [];
for (const cell of document.querySelectorAll("table.agents th, table.agents td")) {
  const text = cell.firstChild;
  if (!text || text.nodeType !== Node.TEXT_NODE) continue;
  for (const match of text.data.matchAll(/[^\\s\\/-]+/g)) {
    const range = document.createRange();
    range.setStart(text, match.index);
    range.setEnd(text, match.index + match[0].length);
    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    if (lines.size > 1) broken.push(match[0]);
  }
}
document.body.setAttribute("data-broken", JSON.stringify(broken));
</script>
"""


@pytest.mark.skipif(CHROMIUM is None, reason=MISSING_REASON)
def test_agents_table_headers_fit_at_1400_px(tmp_path: Path) -> None:
    """A team's agents table in a trial's side panel, in a 1,400 px window: no header or cell
    broken mid-word (it showed `messag|es`, `shar|e`, `work|er`, `$1.23|45`)."""
    job = build_job(tmp_path / "jobs", "team", [TrialSpec("user-mention", rewards={"reward": 1.0})])
    report = build_report([job])
    (solo,) = report.trials[0].agents.values()
    agents = {}
    for agent_id, endpoint in (
        ("lead-1", "claude-sonnet-4-6"),
        ("worker-backend-1", "claude-sonnet-4-6"),
        ("worker-frontend-2", "gpt-5.6-luna"),
    ):
        agents[agent_id] = solo.model_copy(update={
            "role": "worker", "endpoint": endpoint, "messages": 12, "transcript_share": 0.4,
            "cost_usd": 1.2345, "tokens": TokenCounts(input=1234567, cached_input=234567,
                                                      output=34567),
        })  # fmt: skip
    report.trials[0].agents = report.conditions[0].agents = agents
    html = report_html(report, tmp_path)
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    page = tmp_path / "page.html"
    page.write_text(html.replace("</body>", MEASURE_WORDS + "</body>"), encoding="utf-8")
    dom = chromium(
        page.as_uri(), tmp_path / "profile", "--window-size=1400,2000", "--dump-dom"
    ).stdout
    found = re.search(r'data-broken="([^"]*)"', dom)
    assert found is not None, "the measuring script did not run"
    assert json.loads(found.group(1).replace("&quot;", '"')) == []
