"""Aggregation (orchestrator.md §11): errors apart, pass@k, failing dimensions, tokens."""

from documents_support import SHA, STARTED, trial_result
from rich.console import Console

from orchestra.documents.trial import TrialResult
from orchestra.jobs.aggregate import JobRecord, PlannedTask, aggregate, pass_at_k
from orchestra.report.text.exports import summary_csv
from orchestra.report.text.summary import render_summary


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
    # Task a scored 2 of its 3 attempts (an error): named as left out of the layer's pass@k,
    # whose 1.0 its error would otherwise raise silently.
    assert layer["pass_at_k"] == {"value": 1.0, "n_tasks": 1, "left_out": ["buzz-native/a"]}
    assert condition["error_types"] == {"AgentReadinessTimeout": ["buzz-native/a-error"]}
    console = Console(width=200, record=True)
    render_summary(document, console)
    text = console.export_text()
    assert "buzz-native/a" in text and "threaded×1" in text and "(layer, 2 tasks)" in text
    assert "1.00 (k=3, 1 task; 1 with < k scored left out)" in text
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
    """12 planned, 1 scored, 2 cancelled, 1 still running, 8 not started."""
    trials = [trial("buzz-native/w1", "scored", 1.0)]
    trials += [  # attempts up to k = 3 (one beyond would be a confirmation attempt)
        trial_result(task, attempt, trial_name=f"{task}-{attempt}", layer="workflow", status=status)
        for task, attempt, status in (
            ("buzz-native/w1", 2, "cancelled"),
            ("buzz-native/w1", 3, "cancelled"),
            ("buzz-native/w3", 1, "running"),
        )
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


def test_confirmation_attempts_are_counted_apart_from_the_pass_rates() -> None:
    """Attempts beyond k (a confirmation rerun of a regressed task) would bias the rates: only
    regressed tasks get them. Here they would make the layer's pass rate 1/5 instead of 1/2."""
    usage = {"input": 10, "cached_input": 0, "output": 1, "per_agent": {}}

    def attempt(task: str, number: int, reward: float) -> TrialResult:
        return trial_result(
            task, number, status="scored", reward=reward, rewards={"reward": reward},
            finished_at="2026-11-29T10:00:10.000000Z", tokens=usage, cost_usd=0.5,
        )  # fmt: skip

    job = job_record(
        "j-regression",
        1,
        [PlannedTask("buzz-native/a", "regression"), PlannedTask("buzz-native/b", "regression")],
        [
            attempt("buzz-native/a", 1, 1.0),
            attempt("buzz-native/b", 1, 0.0),
            *(attempt("buzz-native/b", n, reward) for n, reward in [(2, 0.0), (3, 1.0), (4, 0.0)]),
        ],
    )
    summary = aggregate([job])
    [condition] = summary.conditions
    layer = condition.layers["regression"]
    a, b = layer.tasks["buzz-native/a"], layer.tasks["buzz-native/b"]
    assert (b.planned, b.scored, b.successes, b.not_started, b.pass_rate) == (1, 1, 0, 0, 0.0)
    assert b.pass_at_k is not None and (b.pass_at_k.k, b.pass_at_k.value) == (1, 0.0)
    assert (b.pass_at_ks, b.pass_hat_ks, b.flaky) == ({1: 0.0}, {1: 0.0}, False)
    assert b.confirmation is not None
    assert (b.confirmation.attempts, b.confirmation.scored, b.confirmation.passes) == (3, 3, 1)
    assert a.confirmation is None
    for group in (layer, condition.totals):
        assert (group.planned, group.scored, group.pass_rate, group.pass_rate_all) == (
            2, 2, 0.5, 0.5
        )  # fmt: skip
        assert group.pass_at_k is not None and group.pass_at_k.value == 0.5
        assert group.cost_usd == 2.5  # what the confirmation attempts cost is still spent
    assert b.cost_usd == 2.0 and b.tokens.input == 40
    dumped = summary.model_dump(mode="json")["conditions"][0]["layers"]["regression"]["tasks"]
    assert dumped["buzz-native/b"]["confirmation"] == {"attempts": 3, "scored": 3, "passes": 1}
    console = Console(width=200, record=True)
    render_summary(summary, console)
    lines = console.export_text().splitlines()
    assert (
        "confirmation attempts: buzz-native/b passed 1 of 3 scored "
        "(3 attempts beyond k, not in the pass rates)"
    ) in lines
    (task_row,) = [line for line in lines if line.startswith("regression  buzz-native/b ")]
    assert task_row.split()[2:4] == ["1", "1"]  # Trials and Scored: the planned attempt only
