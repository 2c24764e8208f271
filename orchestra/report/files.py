"""The three report files of runs or jobs (orchestrator.md §2.6 `orchestra report`): written by
`orchestra report` and by a run asked for `--report` (`Run.execute`, which returns their paths)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestra.documents.io import DocumentError
from orchestra.report.html.page import write_report_html
from orchestra.report.junit import write_junit_xml
from orchestra.report.report_json import build_report

REPORT_JSON = "report.json"
JUNIT_XML = "junit.xml"
REPORT_HTML = "report.html"


@dataclass(frozen=True)
class ReportFiles:
    report_json: Path
    junit_xml: Path
    report_html: Path

    @property
    def paths(self) -> tuple[Path, Path, Path]:
        return self.report_json, self.junit_xml, self.report_html


def write_reports(job_dirs: list[Path], out_dir: Path) -> ReportFiles:
    """Write report.json, junit.xml and report.html for these runs or jobs into `out_dir`.

    Raises `DocumentError` when a directory is neither a readable run nor a job.
    """
    report = build_report(job_dirs)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = ReportFiles(out_dir / REPORT_JSON, out_dir / JUNIT_XML, out_dir / REPORT_HTML)
    report.write(files.report_json)
    write_junit_xml(report, files.junit_xml)
    write_report_html(report, files.report_html)
    return files


def report_problem(error: DocumentError | OSError, out_dir: Path) -> str:
    """The line `write_reports`' failure is told as: the document it could not read, or the
    file it could not write."""
    if isinstance(error, OSError):
        return f"{error.filename or out_dir}: cannot write the report ({error.strerror or error})"
    return str(error)
