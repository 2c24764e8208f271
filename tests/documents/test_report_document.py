"""report.json as `ReportDocument` (orchestrator.md §11.3): today's file reads back to the same
bytes, files written by earlier versions still load (compare and the nightly read old
baselines), and a file that does not match is one line naming the field.

`2026-12-08.json` is the report of the sample job (tests/report/report_samples.py) as the
writer writes it today; `2026-12-07.json` the same before the clustered intervals (bootstrap
intervals, no `uncertainty`, no pass@k `left_out`). The older files are that report in the shapes of
earlier versions, from the history of orchestra/report/report_json.py and
orchestra/documents/summary.py: `2026-12-04.json` before the served models and confirmation
counts (no `models`, no `confirmation`, no `cache_write_input`), `2026-12-02.json` before
the statistics too (no intervals, pass@k per k, `successes`, planned task digests, agent
summaries, `error_cause` or a job's stop fields).
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestra.documents.io import DocumentError
from orchestra.documents.report import ReportDocument
from orchestra.paths import PROJECT_ROOT

REPORTS = PROJECT_ROOT / "tests" / "fixtures" / "report-json"
TODAY = REPORTS / "2026-12-08.json"


def test_todays_report_reads_back_to_the_same_bytes() -> None:
    report = ReportDocument.load(TODAY)
    assert report.to_json() == TODAY.read_text(encoding="utf-8")
    assert report.schema_version == 1
    condition = report.conditions[0]
    assert condition.models == {"oracle": "oracle"} and condition.totals.pass_at_ks
    mention = condition.layers["regression"].tasks["buzz-native/user-mention"]
    assert mention.metrics is not None and mention.metrics["user_p_tagged"].passed == 1


def test_the_report_before_clustered_intervals_loads() -> None:
    old = ReportDocument.load(REPORTS / "2026-12-07.json")
    totals = old.conditions[0].totals
    assert totals.task_mean is not None and totals.task_mean.uncertainty is None
    assert totals.pass_rate_interval is not None
    assert totals.pass_rate_interval.method == "bootstrap"
    assert totals.pass_at_k is not None and totals.pass_at_k.left_out == []


@pytest.mark.parametrize("name", ["2026-12-04.json", "2026-12-02.json"])
def test_reports_of_earlier_versions_load_with_what_they_lack_defaulted(name: str) -> None:
    old = ReportDocument.load(REPORTS / name)
    today = ReportDocument.load(TODAY)
    assert [t.trial_name for t in old.trials] == [t.trial_name for t in today.trials]
    assert old.jobs[0].models == {} and old.conditions[0].models == {}
    tasks = old.conditions[0].layers["regression"].tasks
    assert all(task.confirmation is None for task in tasks.values())
    assert old.trials[0].tokens is not None and old.trials[0].tokens.cache_write_input == 0
    # what every version wrote reads the same
    for before, now in zip(old.trials, today.trials, strict=True):
        assert (before.status, before.reward, before.rewards) == (
            now.status,
            now.reward,
            now.rewards,
        )
    assert tasks.keys() == today.conditions[0].layers["regression"].tasks.keys()
    for task_name, task in tasks.items():
        now = today.conditions[0].layers["regression"].tasks[task_name]
        assert (task.scored, task.pass_rate, task.metrics) == (
            now.scored,
            now.pass_rate,
            now.metrics,
        )


def test_the_oldest_shape_lacks_the_statistics() -> None:
    old = ReportDocument.load(REPORTS / "2026-12-02.json")
    task = old.conditions[0].layers["regression"].tasks["buzz-native/user-mention"]
    assert task.successes is None and task.pass_at_ks == {} and task.pass_rate_interval is None
    assert old.conditions[0].totals.task_mean is None and old.conditions[0].agents == {}
    assert all(t.error_cause is None and t.agents == {} for t in old.trials)
    assert {task.digest for task in old.jobs[0].planned_tasks} == {""}


def _written(tmp_path: Path, document: dict[str, object]) -> Path:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("trials"), "trials: required key is missing"),
        (lambda d: d.update(score=1), "score: unknown key"),
        (lambda d: d["trials"][0].update(status="passed"), "trials[0].status: input should be"),
        (lambda d: d.update(schema_version=2), "schema_version: "),
    ],
    ids=["missing", "unknown", "bad-status", "newer-schema"],
)
def test_a_report_that_does_not_match_is_one_line_naming_the_field(
    tmp_path: Path, change: Callable[[dict[str, Any]], object], message: str
) -> None:
    document = json.loads(TODAY.read_text(encoding="utf-8"))
    change(document)
    path = _written(tmp_path, document)
    with pytest.raises(DocumentError) as caught:
        ReportDocument.load(path)
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)


def test_a_report_with_the_do_nothing_floor_reads_back_and_older_ones_lack_it() -> None:
    floored = REPORTS / "2026-12-08-floor.json"
    report = ReportDocument.load(floored)
    assert report.to_json() == floored.read_text(encoding="utf-8")
    floor = report.conditions[0].floor
    assert floor is not None and floor.passing == ["buzz-contracts/fyi-mention-silence"]
    assert (floor.value, floor.n_tasks, floor.idle_passes) == (0.5, 2, 1)
    tasks = report.conditions[0].layers["regression"].tasks
    assert tasks["buzz-contracts/fyi-mention-silence"].floor == 1.0
    for name in ("2026-12-02.json", "2026-12-04.json", "2026-12-07.json", "2026-12-08.json"):
        old = ReportDocument.load(REPORTS / name).conditions[0]
        assert old.floor is None
        assert all(t.floor is None for layer in old.layers.values() for t in layer.tasks.values())
