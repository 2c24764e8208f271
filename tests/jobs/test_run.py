"""Runs: one plan as a unit, found again by its plan, resumed or refused."""

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from documents_support import job_config, trial_result
from runs_support import DATASET, run_request, start_run

from orchestra.documents.enums import EnvKind
from orchestra.documents.run import RunRecord
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.plan import PlanError
from orchestra.jobs.run import (
    check_plan_unchanged,
    choose_run,
    job_records,
    run_of,
    run_progress,
    trial_sandboxes,
)
from orchestra.paths import RunPaths

T0 = datetime(2026, 11, 29, 17, 42, 3, tzinfo=UTC)
T1 = datetime(2026, 11, 29, 18, 0, 0, tzinfo=UTC)
T2 = datetime(2026, 11, 29, 19, 0, 0, tzinfo=UTC)
MENTIONS = (DATASET / "user-mention", DATASET / "ambiguous-user-mention")


def test_a_new_run_records_its_whole_plan_before_any_trial(tmp_path: Path) -> None:
    target, warnings = choose_run(
        tmp_path, run_request(*MENTIONS), run_name=None, job_name=None, new_run=False, now=T0
    )
    assert warnings == [] and target.origin == "new"
    name = "buzz-native-solo-oracle-20261129T174203Z"
    assert target.paths.root == tmp_path / name
    assert [job.name for job in target.jobs] == [f"{name}-regression", f"{name}-workflow"]
    target.begin(owed_trials=4)
    record = RunRecord.load(tmp_path / name / "run.json")
    assert [job.job_name for job in record.jobs] == [f"{name}-regression", f"{name}-workflow"]
    assert [job.plan.attempts for job in record.jobs] == [1, 3] and record.n_planned == 4
    assert record.resumes == [] and record.settings.selection.paths == [DATASET]
    assert not (tmp_path / name / f"{name}-regression").exists()  # only the record so far
    progress = run_progress(target.paths, record, keep_errors=False)
    assert (progress.planned, progress.owed, progress.unfinished) == (4, 4, 4)
    again, _ = choose_run(
        tmp_path, run_request(*MENTIONS), run_name=None, job_name=None, new_run=True, now=T0
    )
    assert again.paths.name == f"{name}-2"  # same second, --new-run: a name of its own


def finish(jobs: Path, record: RunRecord, status: str = "scored") -> None:
    """Give every planned slot of the run a trial of `status`."""
    for job in record.jobs:
        job_dir = jobs / record.run_name / job.job_name
        for attempt, task in job.plan.slots():
            trial = job_dir / f"{task.rpartition('/')[2]}__{attempt}"
            trial.mkdir(parents=True)
            trial_result(task, attempt, status=status, trial_name=trial.name).write(
                trial / "result.json"
            )


def test_rerunning_the_command_finds_the_most_recent_unfinished_run(tmp_path: Path) -> None:
    older = start_run(tmp_path, run_request(*MENTIONS), T0)
    newer = start_run(tmp_path, run_request(*MENTIONS), T1)
    found, warnings = choose_run(
        tmp_path, run_request(*MENTIONS), run_name=None, job_name=None, new_run=False, now=T2
    )
    assert found.origin == "found" and found.paths.name == newer.run_name and warnings == []
    assert [job.name for job in found.jobs] == [job.job_name for job in newer.jobs]
    finish(tmp_path, newer, status="error")  # ran to the end, with errors: finished
    found, _ = choose_run(
        tmp_path, run_request(*MENTIONS), run_name=None, job_name=None, new_run=False, now=T2
    )
    assert found.paths.name == older.run_name
    fresh, _ = choose_run(
        tmp_path, run_request(*MENTIONS), run_name=None, job_name=None, new_run=True, now=T2
    )
    assert fresh.origin == "new"
    for other in (run_request(MENTIONS[0]), run_request(*MENTIONS, attempts=2)):
        other_run, _ = choose_run(
            tmp_path, other, run_name=None, job_name=None, new_run=False, now=T2
        )
        assert other_run.origin == "new"  # another plan is never resumed by default
    copy = tmp_path / "copy"
    for task in MENTIONS:
        shutil.copytree(task, copy / task.name)
    moved = run_request(*(copy / task.name for task in MENTIONS), dataset=copy)
    other_dataset, _ = choose_run(
        tmp_path, moved, run_name=None, job_name=None, new_run=False, now=T2
    )
    assert other_dataset.origin == "new"


def test_an_unreadable_run_record_is_named_and_skipped(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "run.json").write_text('{"run_name": 3}\n')
    target, warnings = choose_run(
        tmp_path, run_request(*MENTIONS), run_name=None, job_name=None, new_run=False, now=T0
    )
    assert target.origin == "new"
    (warning,) = warnings
    assert warning.startswith(f"{broken / 'run.json'}: ") and "not considered" in warning


def test_a_named_run_is_resumed_when_its_plan_matches_and_refused_otherwise(
    tmp_path: Path,
) -> None:
    stored = start_run(tmp_path, run_request(*MENTIONS), T0, run_name="nightly", job_name="n")
    assert [job.job_name for job in stored.jobs] == ["n-regression", "n-workflow"]
    target, _ = choose_run(
        tmp_path, run_request(*MENTIONS), run_name="nightly", job_name=None, new_run=False
    )
    assert target.origin == "named" and [job.name for job in target.jobs] == [
        "n-regression",
        "n-workflow",
    ]
    with pytest.raises(PlanError, match=r"exists with a different configuration \(jobs\)"):
        choose_run(
            tmp_path, run_request(*MENTIONS, attempts=2), run_name="nightly", job_name=None,
            new_run=False,
        )  # fmt: skip
    start_run(tmp_path, run_request(MENTIONS[0]), T0, run_name="single")
    for other, fields in (
        (run_request(MENTIONS[0], attempts=2), "attempts"),
        (run_request(DATASET / "reply-to-thread", attempts=2), "attempts, tasks"),
    ):
        with pytest.raises(PlanError, match=rf"\({fields}\); choose another --run-name$"):
            choose_run(tmp_path, other, run_name="single", job_name=None, new_run=False)
    old_job = tmp_path / "old"
    old_job.mkdir()
    (old_job / "config.json").write_text("{}")
    with pytest.raises(PlanError, match=r"from before runs; resume it with `orchestra resume"):
        choose_run(tmp_path, run_request(*MENTIONS), run_name=None, job_name="old", new_run=False)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(PlanError, match=r"other exists and is not a run; choose another"):
        choose_run(tmp_path, run_request(*MENTIONS), run_name="other", job_name=None, new_run=False)


def test_a_run_reads_as_all_its_jobs_including_those_not_started(tmp_path: Path) -> None:
    record = start_run(tmp_path, run_request(*MENTIONS), T0, run_name="r")
    regression = record.jobs[0]
    finish(tmp_path, record.model_copy(update={"jobs": [regression]}), status="cancelled")
    manifest = {"path": "m.yaml", "sha256": record.manifest_sha256, "condition": record.condition}
    job_config(
        regression.job_name,
        plan=regression.plan.model_dump(),
        manifest=manifest | {"normalized": {}},
    ).write(tmp_path / "r" / regression.job_name / "config.json")
    progress = run_progress(RunPaths(tmp_path / "r"), record, keep_errors=False)
    assert (progress.owed, progress.unfinished, progress.finished) == (4, 4, False)
    first, second = job_records(tmp_path / "r")
    assert (first.name, first.started, len(first.trials)) == ("r-regression", True, 1)
    assert (second.name, second.started, second.trials) == ("r-workflow", False, [])
    assert second.path == str(tmp_path / "r" / "r-workflow") and second.attempts == 3
    workflow = aggregate([first, second]).conditions[0].layers["workflow"]
    assert (workflow.planned, workflow.not_started) == (3, 3)
    assert run_of(tmp_path / "r" / regression.job_name) == RunPaths(tmp_path / "r")
    assert run_of(tmp_path / "r") == RunPaths(tmp_path / "r") and run_of(tmp_path) is None


def test_resume_refuses_a_plan_whose_tasks_changed(tmp_path: Path) -> None:
    copy = tmp_path / "tasks" / "user-mention"
    shutil.copytree(MENTIONS[0], copy)
    record = start_run(tmp_path / "jobs", run_request(copy, dataset=copy), T0, run_name="r")
    condition = run_request().condition
    assert [j.name for j in check_plan_unchanged(RunPaths(tmp_path / "jobs" / "r"), record,
                                                 condition, "local")] == ["r"]  # fmt: skip
    (copy / "instruction.md").write_text("something else\n")
    with pytest.raises(PlanError, match=r"run r cannot be resumed: .*\(tasks\); start a new run"):
        check_plan_unchanged(RunPaths(tmp_path / "jobs" / "r"), record, condition, EnvKind.LOCAL)


def test_cleanup_finds_the_sandboxes_of_runs_and_of_old_jobs(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    for path in ("run/job-a/t1/sandbox", "run/job-b/t2/sandbox", "old-job/t3/sandbox"):
        (tmp_path / path).mkdir(parents=True)
    assert trial_sandboxes(tmp_path) == [
        tmp_path / "old-job/t3/sandbox",
        tmp_path / "run/job-a/t1/sandbox",
        tmp_path / "run/job-b/t2/sandbox",
    ]
    assert trial_sandboxes(tmp_path, "run") == trial_sandboxes(tmp_path)[1:]
    assert trial_sandboxes(tmp_path, "job-b") == [tmp_path / "run/job-b/t2/sandbox"]
    assert trial_sandboxes(tmp_path, "old-job") == [tmp_path / "old-job/t3/sandbox"]
