"""report.html at scale: 200 trials fit 1280 and 1920 px windows without
horizontal overflow, and the filter bar narrows the trials by outcome, task, failing dimension and
transcript text. Rendered by headless Chromium."""

import json
from pathlib import Path

import pytest
from browser import CHROMIUM, MISSING_REASON, colour_counts, probe, screenshot
from jobs_builder import build_job
from report_samples import NEEDLE, large_trials
from test_html_trajectory import sample_trajectory

from orchestra.documents.report import ReportDocument, ReportTrial
from orchestra.jsonio import write_json_atomic
from orchestra.paths import JobPaths
from orchestra.report.html.filter import OPEN_TRIALS_UP_TO
from orchestra.report.html.page import write_report_html
from orchestra.report.html.trajectory import has_trajectories
from orchestra.report.report_json import build_report

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=MISSING_REASON)

#: Every element whose box ends right of the window, and every scrolling box that scrolls.
OVERFLOW_PROBE = """
document.querySelectorAll("details").forEach((section) => { section.open = true; });
const width = document.documentElement.clientWidth;
const over = [];
for (const element of document.querySelectorAll("body *")) {
  const box = element.getBoundingClientRect();
  const name = `${element.tagName.toLowerCase()}.${element.className}`;
  if (box.width && box.right > width + 0.5) over.push(`${name} ends at ${Math.round(box.right)}`);
  if (getComputedStyle(element).overflowX !== "visible"
      && element.scrollWidth > element.clientWidth + 1) over.push(`${name} scrolls`);
}
document.body.dataset.probe = JSON.stringify({
  page: document.documentElement.scrollWidth, window: width, over: over.slice(0, 10),
});
"""

#: Set the filters, then count what stays visible: index rows and trial sections.
FILTER_PROBE = """
const visible = (selector) => Array.from(document.querySelectorAll(selector))
  .filter((element) => element.offsetParent !== null).length;
const counts = () => ({rows: visible("table.index tr[data-trial]"), trials: visible("details.trial"),
                       label: document.getElementById("f-count").textContent});
const set = (id, value) => {
  const field = document.getElementById(id);
  field.value = value;
  field.dispatchEvent(new Event(id === "f-text" ? "input" : "change"));
};
const result = {bar: visible("#filters"), all: counts(),
                collapsed: document.querySelectorAll("details.trial[open]").length};
set("f-status", "error"); result.error = counts();
set("f-status", ""); set("f-task", "buzz-native/user-mention"); result.task = counts();
set("f-status", "fail"); result.taskFail = counts();
set("f-task", ""); set("f-status", "");
set("f-failing", "memory_retrieval_dimension_0_held"); result.failing = counts();
set("f-failing", ""); set("f-text", "NEEDLE"); result.text = counts();
set("f-text", "no such words anywhere"); result.nothing = counts();
set("f-text", ""); result.reset = counts();
document.body.dataset.probe = JSON.stringify(result);
""".replace("NEEDLE", NEEDLE)


@pytest.fixture(scope="module")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ReportDocument]:
    jobs = tmp_path_factory.mktemp("large") / "jobs"
    job = build_job(jobs, "large-job", large_trials(), attempts=20)
    for trial in build_report([job]).trials[::10]:  # trajectories widen a trial's section
        path = JobPaths(job).trial(trial.trial_name).trajectory("solo-1")
        write_json_atomic(path, sample_trajectory().to_document())
    report = build_report([job])
    assert len(report.trials) == 200
    assert sum(has_trajectories(t) for t in report.trials) == 20
    write_report_html(report, job / "report.html")
    return job / "report.html", report


@pytest.mark.parametrize("width", [1280, 1920])
def test_nothing_overflows_at_desktop_widths(
    large_report: tuple[Path, ReportDocument], tmp_path: Path, width: int
) -> None:
    page, _ = large_report
    shot = screenshot(page.as_uri(), tmp_path / "shot", tmp_path / f"{width}.png", width, 1400)
    assert len(colour_counts(shot)) > 50  # a rendered page, not a blank one
    measured = json.loads(probe(page, OVERFLOW_PROBE, tmp_path / "probe", width))
    assert measured["window"] == width  # the window size took effect
    assert measured["over"] == [] and measured["page"] <= width, measured


def test_the_filter_hides_rows_and_trials(
    large_report: tuple[Path, ReportDocument], tmp_path: Path
) -> None:
    page, report = large_report
    trials = report.trials

    def expected(keep) -> dict:
        n = sum(1 for t in trials if keep(t))
        return {"rows": n, "trials": n, "label": f"showing {n} of 200 trials"}

    def outcome(t: ReportTrial) -> str:
        return ("pass" if t.succeeded else "fail") if t.status == "scored" else t.status.value

    result = json.loads(probe(page, FILTER_PROBE, tmp_path / "probe", 1280))
    assert result["bar"] == 1 and result["collapsed"] == 0  # 200 > OPEN_TRIALS_UP_TO
    assert len(trials) > OPEN_TRIALS_UP_TO
    assert result["all"] == expected(lambda t: True)
    assert result["error"] == expected(lambda t: t.status == "error") != result["all"]
    assert 0 < result["error"]["rows"] < 200
    user_mention = lambda t: t.task_name == "buzz-native/user-mention"  # noqa: E731
    assert result["task"] == expected(user_mention)
    assert result["taskFail"] == expected(lambda t: user_mention(t) and outcome(t) == "fail")
    assert result["failing"] == expected(
        lambda t: "memory_retrieval_dimension_0_held" in t.failing_metrics
    )
    assert 0 < result["failing"]["rows"] < 200

    def transcript_holds_needle(t: ReportTrial) -> bool:
        evidence = t.files.evidence_json
        return bool(evidence) and NEEDLE in Path(evidence).read_text()

    assert result["text"] == expected(transcript_holds_needle)
    assert 0 < result["text"]["rows"] < 200
    assert result["nothing"] == expected(lambda t: False)
    assert result["reset"] == result["all"]
