"""`Run.execute` writes the reports a run asks for (`--report`) and returns their paths, so a
library caller such as bench/scale.py gets them without the command line (orchestrator.md
§2.2 `--report`, §2.5). The trials are scripted (run_support.py); the run is the driver's own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from run_support import ScriptedTrials, base_config, benchmark, resume

from orchestra.documents.enums import ErrorType
from orchestra.report.files import ReportFiles
from orchestra.run.outcome import RunEnd

pytestmark = pytest.mark.e2e


def test_a_run_asked_for_reports_writes_them_and_returns_their_paths(
    relay_url: str, tmp_path: Path
) -> None:
    outcome = benchmark(base_config(tmp_path, relay_url, attempts=2, report=True), ScriptedTrials())
    run_dir = tmp_path / "jobs" / "run"
    assert outcome.end is RunEnd.DONE and outcome.errors == []
    assert outcome.reports == [
        ReportFiles(run_dir / "report.json", run_dir / "junit.xml", run_dir / "report.html")
    ]
    report = json.loads(outcome.reports[0].report_json.read_text(encoding="utf-8"))
    assert len(report["trials"]) == 2
    assert "<testsuites" in outcome.reports[0].junit_xml.read_text(encoding="utf-8")
    assert outcome.reports[0].report_html.stat().st_size > 0


def test_a_run_not_asked_for_reports_writes_none(relay_url: str, tmp_path: Path) -> None:
    outcome = benchmark(base_config(tmp_path, relay_url), ScriptedTrials())
    assert outcome.end is RunEnd.DONE and outcome.reports == []
    assert not (tmp_path / "jobs" / "run" / "report.json").exists()


def test_a_report_that_cannot_be_written_is_one_error_line(relay_url: str, tmp_path: Path) -> None:
    config = base_config(tmp_path, relay_url, attempts=2, retries=0)
    benchmark(config, ScriptedTrials(errors={2: [ErrorType.STACK_UNAVAILABLE]}))
    html = tmp_path / "jobs" / "run" / "report.html"
    html.mkdir()  # where the page goes: the resume's report cannot be written
    outcome = resume(tmp_path / "jobs" / "run", ScriptedTrials(), report=True)
    assert outcome.end is RunEnd.DONE and outcome.reports == []
    [error] = outcome.errors  # the page is written beside its place, then moved over it
    assert re.fullmatch(rf"{html}(\.tmp-\d+)?: cannot write the report \(Is a directory\)", error)
