"""Issue 31 item 4, the report's rough edges: no raw `None` in any rendering, and a combined
report of several jobs or conditions that tells their rows apart."""

from __future__ import annotations

import re
from pathlib import Path

from jobs_builder import TrialSpec, build_job
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.report.html import report_html
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
