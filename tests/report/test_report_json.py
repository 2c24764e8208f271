"""report.json: every number matches the trial results it was built from."""

import json
import re
from pathlib import Path

import pytest
from jobs_builder import build_job
from report_samples import sample_trials

from orchestra.documents.io import DocumentError
from orchestra.documents.report import ReportDocument
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.layout import load_job_record
from orchestra.paths import PROJECT_ROOT
from orchestra.report.report_json import build_report
from orchestra.report.stats.estimates import with_intervals

TODAY = PROJECT_ROOT / "tests" / "fixtures" / "report-json" / "2026-12-08.json"
FIXTURE_GENERATED_AT = "2026-12-07T23:59:00.000000Z"


def trial_results(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}


def test_trials_carry_the_trial_results_verbatim(sample_job: Path) -> None:
    report = build_report([sample_job]).model_dump(mode="json")
    results = trial_results(sample_job)
    assert sorted(t["trial_name"] for t in report["trials"]) == sorted(results)
    for trial in report["trials"]:
        result = results[trial["trial_name"]]
        for key in (
            "status",
            "reward",
            "rewards",
            "stop_reason",
            "tokens",
            "cost_usd",
            "layer",
            "attempt",
            "exception_info",
            "started_at",
            "finished_at",
        ):
            assert trial[key] == result[key], (trial["trial_name"], key)
        phases = {k: v["seconds"] for k, v in result["timings"].items() if isinstance(v, dict)}
        assert trial["durations"]["phase_seconds"] == phases
        assert (
            trial["durations"]["agent_active_seconds"] == result["timings"]["agent_active_seconds"]
        )
    by_name = {t["trial_name"]: t for t in report["trials"]}
    failed = next(
        t
        for t in by_name.values()
        if t["task_name"] == "buzz-native/user-mention" and t["attempt"] == 2
    )
    assert failed["failing_metrics"] == ["reward", "user_p_tagged"]
    assert failed["succeeded"] is False
    assert failed["durations"]["total_seconds"] == 20.0
    assert failed["details"]["parsed_numbers"] == [5328.0]
    error = next(t for t in by_name.values() if t["status"] == "error")
    assert error["exception_info"]["exception_type"] == "AgentProcessExited"
    assert "evidence_json" not in error["files"] and error["files"]["evidence_error"]
    assert set(error["files"]["agents"]["solo-1"]) == {
        "system_prompt",
        "stdout",
        "stderr",
        "events",
    }


def test_summary_is_the_section_11_aggregation_plus_metric_counts(sample_job: Path) -> None:
    report = build_report([sample_job]).model_dump(mode="json")
    summary = with_intervals(aggregate([load_job_record(sample_job)]))
    expected = summary.model_dump(mode="json")["conditions"]
    condition = report["conditions"][0]
    for layer_name, layer in expected[0]["layers"].items():
        for task_name, task in layer["tasks"].items():
            mine = dict(condition["layers"][layer_name]["tasks"][task_name])
            mine.pop("metrics")
            mine.pop("stop_reasons")
            assert mine == task
    tasks = condition["layers"]["regression"]["tasks"]
    mention = tasks["buzz-native/user-mention"]
    assert mention["metrics"]["user_p_tagged"] == {"passed": 1, "scored": 2, "rate": 0.5}
    assert mention["metrics"]["answer_correct"] == {"passed": 2, "scored": 2, "rate": 1.0}
    assert mention["pass_rate"] == 0.5 and mention["tokens"]["input"] == 3000
    assert mention["cost_usd"] == 0.75
    thread = tasks["buzz-native/reply-to-thread"]
    assert thread["errors"] == 1 and thread["scored"] == 1
    assert thread["metrics"]["reward"] == {"passed": 1, "scored": 1, "rate": 1.0}
    assert thread["stop_reasons"] == {"done_message": 1, "none": 1}
    regression = condition["layers"]["regression"]
    assert regression["metrics"]["reward"] == {"passed": 2, "scored": 3, "rate": 2 / 3}
    assert regression["stop_reasons"] == {"done_message": 1, "none": 1, "turn_end": 2}
    assert condition["totals"]["metrics"]["reward"] == {"passed": 3, "scored": 5, "rate": 0.6}
    assert condition["error_types"] == {
        "AgentProcessExited": [t["trial_name"] for t in report["trials"] if t["status"] == "error"]
    }
    assert report["jobs"][0]["attempts"] == 2 and report["jobs"][0]["oracle"] is True


def test_written_file_round_trips(sample_job: Path, tmp_path: Path) -> None:
    report = build_report([sample_job])
    report.write(tmp_path / "report.json")
    text = (tmp_path / "report.json").read_text(encoding="utf-8")
    assert json.loads(text) == report.model_dump(mode="json") and text.endswith("}\n")
    assert ReportDocument.load(tmp_path / "report.json") == report


def test_todays_report_json_is_byte_for_byte_what_it_was(tmp_path: Path) -> None:
    """The typed document writes what the dict-building writer wrote (the fixture is that
    writer's output for this job; its directory and generation time made fixed). A change
    to report.json on purpose replaces the fixture and keeps the old file as an old shape
    that must still load (tests/documents/test_report_document.py)."""
    job = build_job(tmp_path / "jobs", "sample-job", sample_trials(), attempts=2)
    build_report([job]).write(tmp_path / "report.json")
    written = (tmp_path / "report.json").read_text(encoding="utf-8")
    written = written.replace(str(tmp_path), "/tmp/report-fixture")
    written = re.sub(
        r'"generated_at": "[^"]*"', f'"generated_at": "{FIXTURE_GENERATED_AT}"', written
    )
    assert written == TODAY.read_text(encoding="utf-8")


def test_not_a_job_directory_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(
        DocumentError, match="not a run or job directory \\(no run.json or config.json\\)"
    ):
        build_report([tmp_path])
