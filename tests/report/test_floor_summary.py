"""The do-nothing floor as summaries show it (docs/decisions.md D114): read from a run's
`floor.json`, a Floor column with the tasks a do-nothing agent passes marked, the mean over
tasks, unknown floors as "—" (never 0), and the passes that came from trials that never called
a tool; a run without a floor prints as before."""

from __future__ import annotations

import io
from pathlib import Path

from jobs_builder import TrialSpec, build_job
from rich.console import Console

from orchestra.documents.floor import RunFloor, TaskFloor
from orchestra.documents.report import ReportDocument
from orchestra.documents.summary import Summary
from orchestra.jobs.aggregate import JobRecord, aggregate
from orchestra.jobs.floor import attach_floor
from orchestra.jobs.layout import load_job_record
from orchestra.paths import RunPaths
from orchestra.report.html.page import report_html
from orchestra.report.leaderboard.board import Entry, Leaderboard
from orchestra.report.leaderboard.format import format_text
from orchestra.report.report_json import report_of_records
from orchestra.report.text.exports import summary_csv, summary_json
from orchestra.report.text.summary import render_summary

DIGEST = "0" * 64
PASS = {"reward": 1.0}
FAIL = {"reward": 0.0}


def job(tmp_path: Path, *, flags: tuple[str, ...] = ("no-tool-call",)) -> JobRecord:
    """Two tasks, two attempts each: `fyi` passed both, once by a trial that never called a
    tool; `reply` passed once."""
    directory = build_job(
        tmp_path,
        "job",
        [
            TrialSpec("fyi", 1, rewards=PASS, flags=flags),
            TrialSpec("fyi", 2, rewards=PASS),
            TrialSpec("reply", 1, rewards=PASS),
            TrialSpec("reply", 2, rewards=FAIL, flags=flags),
        ],
        attempts=2,
    )
    return load_job_record(directory)


def floor_of(tmp_path: Path, tasks: dict[str, float | None], digest: str = DIGEST) -> RunPaths:
    run = RunPaths(tmp_path)
    RunFloor(
        tasks={
            f"buzz-native/{name}": TaskFloor(contract_digest=digest, reward=reward, source="trial")
            for name, reward in tasks.items()
        }
    ).write(run.floor_json)
    return run


def printed(summary: Summary) -> str:
    out = io.StringIO()
    render_summary(summary, Console(file=out, width=400, color_system=None), None)
    return out.getvalue()


def test_the_floor_is_shown_beside_the_condition_marked_where_doing_nothing_passes(
    tmp_path: Path,
) -> None:
    record = job(tmp_path)
    attach_floor([record], floor_of(tmp_path, {"fyi": 1.0, "reply": 0.0}))
    summary = aggregate([record])
    floor = summary.conditions[0].floor
    assert floor is not None
    assert (floor.value, floor.n_tasks, floor.passing) == (0.5, 2, ["buzz-native/fyi"])
    assert floor.idle_passes == 1  # fyi #1; reply #2 never called a tool but failed
    text = printed(summary)
    header = next(line for line in text.splitlines() if line.startswith("Layer"))
    at = header.index("Floor")
    assert header.index("Pass rate (all)") < at < header.index("pass@k")
    rows = {line.split()[1]: line for line in text.splitlines() if line.startswith("regression")}
    assert rows["buzz-native/fyi"][at:].startswith("1.00*")
    assert rows["buzz-native/reply"][at:].startswith("0.00 ")
    condition_row = next(line for line in text.splitlines() if line.startswith("all"))
    assert condition_row[at:].startswith("0.50 ")
    assert (
        "do-nothing floor: 0.50 over 2 tasks (every seat on the null endpoint; * a do-nothing "
        "agent passes the task: buzz-native/fyi)" in text
    )
    assert (
        "1 pass on tasks a do-nothing agent passes came from trials that never called a tool: "
        "indistinguishable from doing nothing" in text
    )


def test_an_unknown_floor_is_a_dash_never_zero(tmp_path: Path) -> None:
    record = job(tmp_path, flags=())
    attach_floor([record], floor_of(tmp_path, {"fyi": None, "reply": 0.0}))
    summary = aggregate([record])
    floor = summary.conditions[0].floor
    assert floor is not None and floor.unknown == ["buzz-native/fyi"]
    assert (floor.value, floor.n_tasks, floor.passing, floor.idle_passes) == (0.0, 1, [], 0)
    text = printed(summary)
    at = next(line for line in text.splitlines() if line.startswith("Layer")).index("Floor")
    fyi = next(line for line in text.splitlines() if "buzz-native/fyi" in line)
    assert fyi[at:].startswith("— ")
    assert "floor unknown (its trial did not score): buzz-native/fyi" in text
    assert "indistinguishable" not in text and "passes the task: none)" in text


def test_a_run_without_a_floor_prints_and_writes_as_before(tmp_path: Path) -> None:
    record = job(tmp_path)
    attach_floor([record], RunPaths(tmp_path))  # no floor.json
    summary = aggregate([record])
    assert summary.conditions[0].floor is None
    assert "Floor" not in printed(summary) and "do-nothing" not in printed(summary)
    assert '"floor"' not in summary_json(summary)
    assert summary_csv(summary).splitlines()[0].endswith(",floor")
    assert summary_csv(summary).splitlines()[1].endswith(",")


def test_a_task_whose_contract_changed_since_has_no_floor(tmp_path: Path) -> None:
    record = job(tmp_path)
    for task in record.tasks:  # the run's floor was taken of other contracts
        object.__setattr__(task, "contract_digest", "1" * 64)
    attach_floor([record], floor_of(tmp_path, {"fyi": 1.0, "reply": 0.0}))
    assert record.floor == {}
    assert aggregate([record]).conditions[0].floor is None


def test_report_json_html_and_leaderboard_carry_the_floor(tmp_path: Path) -> None:
    record = job(tmp_path)
    attach_floor([record], floor_of(tmp_path, {"fyi": 1.0, "reply": 0.0}))
    report = report_of_records([record])
    again = ReportDocument.model_validate_json(report.to_json())
    condition = again.conditions[0]
    assert condition.floor is not None and condition.floor.passing == ["buzz-native/fyi"]
    assert condition.layers["regression"].tasks["buzz-native/fyi"].floor == 1.0
    page = report_html(report, tmp_path)
    assert '<th class="num">Floor</th>' in page and '<td class="num">1.00*</td>' in page
    assert "indistinguishable from doing nothing" in page
    totals = condition.totals
    entry = Entry(
        label="c", condition="c", manifest_sha256=DIGEST, endpoints_sha256="", models={},
        timeout_multiplier=None, jobs=["job"], n_tasks=2, scored=4, task_mean=None,
        pass_rate=totals.pass_rate, pass_rate_interval=None, pass_hat_k=None, cost_usd=0.0,
        tokens=totals.tokens, mean_trial_seconds=None, floor=condition.floor,
    )  # fmt: skip
    board = format_text(Leaderboard(alpha=0.05, entries=[entry], matrix={}, shown_apart=[]))
    header, row = board.splitlines()[:2]
    assert row[header.index("Floor") :].startswith("0.50 ")
    assert "note: c: do-nothing floor: 0.50 over 2 tasks" in board
