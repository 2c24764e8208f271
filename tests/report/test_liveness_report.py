"""Liveness flags in every output (orchestrator.md §10.3, §11.2): the summary's counts and its
warning for a condition that never called a tool, report.json, report.html, junit.xml and the
results database, and the seat's requests, time and flags."""

import xml.etree.ElementTree as ET
from pathlib import Path

from jobs_builder import TrialSpec, build_job
from rich.console import Console

from orchestra.documents.summary import Summary
from orchestra.report.html.page import write_report_html
from orchestra.report.junit import junit_xml
from orchestra.report.report_json import build_report
from orchestra.report.text.liveness import NEVER_ACTED_WARNING
from orchestra.report.text.summary import render_summary
from orchestra.results.database import add_directory
from orchestra.results.schema import open_database

IDLE = ("no-tool-call", "text-only")


def text_only_job(jobs: Path, *, acting: bool) -> Path:
    """Two trials that only wrote text, and (`acting`) a third that acted but looped."""
    trials = [
        TrialSpec("user-mention", rewards={"reward": 0.0}, flags=IDLE),
        TrialSpec("reply-to-thread", rewards={"reward": 0.0}, flags=IDLE),
    ]
    if acting:
        trials.append(TrialSpec("dm-reply", rewards={"reward": 1.0}, flags=("looping",)))
    return build_job(jobs, "text-only" if not acting else "mixed", trials)


def summary_text(job: Path) -> str:
    console = Console(record=True, width=250)
    render_summary(Summary(conditions=build_report([job]).conditions), console)
    return console.export_text()


def test_a_condition_that_never_called_a_tool_is_counted_and_warned(tmp_path: Path) -> None:
    job = text_only_job(tmp_path / "jobs", acting=False)
    report = build_report([job])
    totals = report.conditions[0].totals
    assert totals.flags == {"no-tool-call": 2, "text-only": 2}
    assert report.conditions[0].never_acted
    assert [trial.flags for trial in report.trials] == [list(IDLE), list(IDLE)]
    text = summary_text(job)
    assert "flags: no-tool-call×2, text-only×2" in text
    assert "warning: no trial of this condition called a tool" in text
    assert "--jinja" in text and "--tool-call-parser" in text
    write_report_html(report, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<th>Flags</th>" in page and "<td>no-tool-call, text-only</td>" in page
    assert NEVER_ACTED_WARNING.split(":")[0] in page


def test_one_acting_trial_lifts_the_warning_and_the_flags_reach_junit_and_the_db(
    tmp_path: Path,
) -> None:
    job = text_only_job(tmp_path / "jobs", acting=True)
    report = build_report([job])
    condition = report.conditions[0]
    assert condition.totals.flags == {"no-tool-call": 2, "text-only": 2, "looping": 1}
    assert not condition.never_acted
    assert "warning: no trial" not in summary_text(job)
    seat = condition.agents["solo-1"]
    assert (seat.requests, seat.active_seconds) == (6, 4.5)
    assert seat.flags == {"no-tool-call": 2, "text-only": 2, "looping": 1}
    root = ET.fromstring(junit_xml(report))
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties["condition.flags.no-tool-call"] == "2"
    assert properties["condition.flags.looping"] == "1"
    outputs = [case.findtext("system-out") or "" for case in root.iter("testcase")]
    assert sum("flags: no-tool-call, text-only" in out for out in outputs) == 2
    connection = open_database(Path(":memory:"), create=True)
    add_directory(connection, job)
    rows = connection.execute(
        "SELECT t.short_name, f.flag FROM flags f JOIN trials t USING (trial_key)"
        " ORDER BY t.short_name, f.flag"
    ).fetchall()
    assert rows == [
        ("dm-reply", "looping"),
        ("reply-to-thread", "no-tool-call"), ("reply-to-thread", "text-only"),
        ("user-mention", "no-tool-call"), ("user-mention", "text-only"),
    ]  # fmt: skip
    seats = connection.execute("SELECT requests, active_seconds, flags FROM agents").fetchall()
    assert (2, 1.5, "no-tool-call,text-only") in seats and (2, 1.5, "looping") in seats
