"""Intervals, pass@k and pass^k over tasks in report.json, junit.xml, report.html and the summary."""

import itertools
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from jobs_builder import TrialSpec, build_job
from rich.console import Console

from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.layout import load_job_record
from orchestra.report.html.page import report_html
from orchestra.report.junit import junit_xml
from orchestra.report.report_json import build_report
from orchestra.report.stats.inference import wilson
from orchestra.report.text.exports import summary_json
from orchestra.report.text.summary import render_summary

#: task -> rewards of its 3 attempts
OUTCOMES = {
    "always": [1.0, 1.0, 1.0],
    "twice": [1.0, 0.0, 1.0],
    "once": [0.0, 0.0, 1.0],
    "never": [0.0, 0.0, 0.0],
}


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_job(tmp_path_factory.mktemp("jobs"), "k3", [
        TrialSpec(task, layer="workflow", attempt=a + 1, rewards={"reward": r})
        for task, rewards in OUTCOMES.items() for a, r in enumerate(rewards)
    ], attempts=3)  # fmt: skip


def _subset_mean(rewards: list[float], k: int, all_pass: bool) -> float:
    subsets = list(itertools.combinations(rewards, k))
    test = all if all_pass else any
    return sum(test(r == 1.0 for r in s) for s in subsets) / len(subsets)


def test_report_json_carries_every_figure(job: Path) -> None:
    condition = build_report([job]).model_dump(mode="json")["conditions"][0]
    tasks = condition["layers"]["workflow"]["tasks"]
    twice = tasks["buzz-native/twice"]
    assert twice["successes"] == 2 and twice["flaky"] is True
    bounds = wilson(2, 3)
    assert twice["pass_rate_interval"] == {
        "low": bounds.low,
        "high": bounds.high,
        "method": "wilson",
    }
    totals = condition["totals"]
    assert totals["flaky_tasks"] == ["buzz-native/once", "buzz-native/twice"]
    for k in (1, 2, 3):
        for key, all_pass in (("pass_at_ks", False), ("pass_hat_ks", True)):
            expected = [_subset_mean(r, k, all_pass) for r in OUTCOMES.values()]
            estimate = totals[key][str(k)]
            assert estimate["value"] == pytest.approx(sum(expected) / 4)
            assert estimate["n_tasks"] == 4
            assert estimate["interval"]["low"] <= estimate["value"] <= estimate["interval"]["high"]
    mean = totals["task_mean"]
    assert mean["value"] == pytest.approx(0.5) and mean["interval"]["method"] == "clustered"
    # Seeded: the same runs give the same interval.
    assert (
        build_report([job]).model_dump(mode="json")["conditions"][0]["totals"]["task_mean"] == mean
    )


def test_json_summary_junit_html_and_table(job: Path) -> None:
    summary = aggregate([load_job_record(job)])
    document = json.loads(summary_json(summary))
    assert document["conditions"][0]["totals"]["pass_rate_interval"]["method"] == "clustered"
    report = build_report([job])
    properties = {
        p.get("name"): p.get("value") for p in ET.fromstring(junit_xml(report)).iter("property")
    }
    interval = report.conditions[0].totals.pass_rate_interval
    assert interval is not None
    assert float(properties["condition.pass_rate_low"]) == pytest.approx(interval.low, abs=1e-5)
    assert properties["condition.flaky_tasks"] == "buzz-native/once,buzz-native/twice"
    assert "condition.pass_hat_3_high" in properties
    page = report_html(report, job)
    assert page.count('<svg class="bar"') >= 6  # 4 tasks, the layer, the condition
    assert "Over tasks: mean pass rate 0.50" in page
    console = Console(width=250, record=True)
    render_summary(summary, console)
    text = console.export_text()
    assert "flaky (passed some attempts, not all): buzz-native/once, buzz-native/twice" in text
    assert "mean over 4 tasks: 0.50 [" in text
