"""Cache-write tokens are summed like the other token counts: per task, layer and
condition, per agent, in the job's `result.json`, `summarize --json`, the CSV and report.json."""

import csv
import io
from pathlib import Path

from jobs_builder import AGENT, TrialSpec, build_job

from orchestra.documents.job import JobResult
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.run import job_records
from orchestra.paths import JobPaths
from orchestra.report.report_json import build_report
from orchestra.report.text.exports import summary_csv


def test_cache_write_tokens_add_up_everywhere(tmp_path: Path) -> None:
    job = build_job(tmp_path, "cached", [
        TrialSpec("user-mention", tokens=(5000, 100, 150), cache_write_input=1200),
        TrialSpec("user-mention", attempt=2, tokens=(4000, 900, 120), cache_write_input=300),
        TrialSpec("reply-to-thread", status="error", rewards=None, stop_reason=None,
                  exception_type="ProviderUnavailable", tokens=(700, 0, 0)),
    ], attempts=2)  # fmt: skip
    expected = {"input": 9700, "cached_input": 1000, "output": 270, "cache_write_input": 1500}
    condition = aggregate(job_records(job)).conditions[0]
    assert condition.totals.tokens.model_dump() == expected
    tasks = condition.layers["regression"].tasks
    assert tasks["buzz-native/user-mention"].tokens.cache_write_input == 1500
    assert tasks["buzz-native/reply-to-thread"].tokens.cache_write_input == 0
    assert condition.agents[AGENT].tokens.model_dump() == expected
    report = build_report([job]).model_dump(mode="json")
    assert report["conditions"][0]["totals"]["tokens"] == expected
    stats = JobResult.load(JobPaths(job).result_json).stats
    assert stats.tokens.model_dump() == expected
    rows = {row["task"]: row for row in csv.DictReader(io.StringIO(summary_csv(aggregate(
        job_records(job)))))}  # fmt: skip
    assert rows["buzz-native/user-mention"]["cache_write_input_tokens"] == "1500"
