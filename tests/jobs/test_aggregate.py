"""Aggregation (orchestrator.md §11): errors apart, pass@k, failing dimensions, tokens."""

from documents_support import SHA, STARTED, trial_result
from rich.console import Console

from orchestra.documents.trial import TrialResult
from orchestra.jobs.aggregate import JobRecord, PlannedTask, aggregate, pass_at_k
from orchestra.report.render import render_summary, summary_csv


def trial(
    task: str,
    status: str,
    reward: float | None = None,
    *,
    layer: str = "workflow",
    rewards: dict | None = None,
    tokens: int | None = None,
) -> TrialResult:
    return trial_result(
        task,
        trial_name=f"{task}-{status}",
        layer=layer,
        status=status,
        reward=reward,
        rewards=rewards
        if rewards is not None
        else ({"reward": reward} if reward is not None else None),
        finished_at="2026-11-29T10:00:10.000000Z",
        tokens=None
        if tokens is None
        else {"input": tokens, "cached_input": 0, "output": 1, "per_agent": {}},
        cost_usd=None if tokens is None else 0.5,
        exception_info={
            "exception_type": "AgentReadinessTimeout",
            "exception_message": "agents did not subscribe within 60 s",
            "exception_traceback": "",
            "occurred_at": STARTED,
            "phase": "setup",
        }
        if status == "error"
        else None,
    )


def job_record(
    name: str,
    attempts: int,
    tasks: list[PlannedTask],
    trials: list[TrialResult] | None = None,
    **flags: bool,
) -> JobRecord:
    """A job of condition `c` in `jobs/j/<name>` (`flags`: `oracle`, `started`)."""
    return JobRecord(
        name=name,
        path=f"jobs/j/{name}",
        condition="c",
        manifest_sha256=SHA,
        attempts=attempts,
        tasks=tasks,
        trials=trials or [],
        **flags,
    )


def test_pass_at_k_estimator() -> None:
    assert abs(pass_at_k(3, 1, 1) - 1 / 3) < 1e-12
    assert pass_at_k(3, 0, 3) == 0.0
    assert pass_at_k(3, 1, 3) == 1.0
    assert abs(pass_at_k(5, 2, 2) - (1 - 3 / 10)) < 1e-12


def test_errors_are_excluded_from_the_pass_rate() -> None:
    job = JobRecord(
        name="j-workflow",
        path="jobs/j-workflow",
        condition="c",
        manifest_sha256=SHA,
        attempts=3,
        tasks=[PlannedTask("buzz-native/a", "workflow"), PlannedTask("buzz-native/b", "workflow")],
        trials=[
            trial("buzz-native/a", "scored", 1.0, tokens=100),
            trial(
                "buzz-native/a",
                "scored",
                0.0,
                rewards={"reward": 0.0, "threaded": 0.0, "other": 1.0},
                tokens=100,
            ),
            trial("buzz-native/a", "error", tokens=50),
            trial("buzz-native/b", "scored", 1.0),
            trial("buzz-native/b", "scored", 1.0),
            trial("buzz-native/b", "scored", 1.0),
        ],
    )
    document = aggregate([job])
    condition = document.model_dump()["conditions"][0]
    task_a = condition["layers"]["workflow"]["tasks"]["buzz-native/a"]
    assert task_a["pass_rate"] == 0.5
    assert task_a["pass_rate_all"] == 1 / 3
    assert task_a["errors"] == 1 and task_a["incomplete"] is True and task_a["pass_at_k"] is None
    assert task_a["failing_dimensions"] == {"threaded": 1}
    assert task_a["tokens"]["input"] == 250 and task_a["cost_usd"] == 1.5
    task_b = condition["layers"]["workflow"]["tasks"]["buzz-native/b"]
    assert task_b["pass_at_k"] == {"k": 3, "value": 1.0}
    layer = condition["layers"]["workflow"]
    assert layer["pass_rate"] == 4 / 5
    assert layer["pass_at_k"] == {"value": 1.0, "n_tasks": 1}
    assert condition["error_types"] == {"AgentReadinessTimeout": ["buzz-native/a-error"]}
    console = Console(width=200, record=True)
    render_summary(document, console)
    text = console.export_text()
    assert "buzz-native/a" in text and "threaded×1" in text and "(layer, 2 tasks)" in text
    assert summary_csv(document).splitlines()[0].startswith("condition,manifest_sha256,layer")


def test_jobs_of_one_condition_aggregate_together_and_pending_slots_count() -> None:
    regression = job_record(
        "j-regression",
        1,
        [PlannedTask("buzz-native/r", "regression")],
        [trial("buzz-native/r", "scored", 1.0, layer="regression")],
        oracle=True,
    )
    workflow = job_record("j-workflow", 3, [PlannedTask("buzz-native/w", "workflow")])
    document = aggregate([regression, workflow]).model_dump()
    assert len(document["conditions"]) == 1
    condition = document["conditions"][0]
    assert list(condition["layers"]) == ["regression", "workflow"]
    assert condition["totals"]["planned"] == 4 and condition["totals"]["scored"] == 1
    assert condition["oracle"] is True


def interrupted_workflow_job() -> JobRecord:
    """Issue 18, defect 4: 12 planned, 1 scored, 2 cancelled, 1 still running, 8 not started."""
    trials = [trial("buzz-native/w1", "scored", 1.0)]
    trials += [
        trial_result(
            "buzz-native/w1", attempt, trial_name=f"w1-{attempt}", layer="workflow", status=status
        )
        for attempt, status in ((2, "cancelled"), (3, "cancelled"), (4, "running"))
    ]
    return job_record(
        "j-workflow", 3, [PlannedTask(f"buzz-native/w{n}", "workflow") for n in range(1, 5)], trials
    )


def test_counts_add_up_after_an_interrupt() -> None:
    document = aggregate([interrupted_workflow_job()])
    layer = document.conditions[0].layers["workflow"]
    counts = (layer.planned, layer.scored, layer.errors, layer.cancelled, layer.running)
    assert counts == (12, 1, 0, 2, 1) and layer.not_started == 8
    assert layer.pass_rate == 1.0 and layer.pass_rate_all == 1 / 12
    task = layer.tasks["buzz-native/w2"]
    assert (task.planned, task.not_started, task.running) == (3, 3, 0)
    assert summary_csv(document).splitlines()[0].split(",")[8:10] == ["running", "not_started"]


def test_summary_shows_both_pass_rates_not_started_and_one_pass_at_k_notation() -> None:
    regression = job_record(
        "j-regression",
        1,
        [PlannedTask("buzz-native/r", "regression")],
        [trial("buzz-native/r", "scored", 1.0, layer="regression")],
    )
    not_started = job_record(
        "j-later", 3, [PlannedTask("buzz-native/x", "workflow")], started=False
    )
    console = Console(width=200, record=True)
    render_summary(aggregate([regression, interrupted_workflow_job(), not_started]), console)
    lines = console.export_text().splitlines()
    header = next(line for line in lines if line.startswith("Layer"))
    assert "Not started" in header and "Pass rate  95% interval  Pass rate (all)" in header
    (layer_row,) = [line for line in lines if line.startswith("workflow    (layer")]
    # planned, scored, errors, cancelled, not started; pass rate over scored, its 95% interval
    # (Wilson: the only scored task passed its one attempt) and the pass rate over all
    assert layer_row.split()[3:13] == [
        "tasks)", "15", "1", "0", "2", "11", "1.00", "[0.21,", "1.00]", "0.07"
    ]  # fmt: skip
    (regression_layer,) = [line for line in lines if line.startswith("regression  (layer")]
    assert "(layer, 1 task)" in regression_layer and "1.00 (k=1, 1 task)" in regression_layer
    (task_row,) = [line for line in lines if "buzz-native/r " in line]
    assert "1.00 (k=1)" in task_row
    assert "trials: 2/16 done (2 scored, 0 errors), 2 cancelled, 1 running, 11 not started" in lines
    assert "job directory: jobs/j/j-later (not started)" in lines
