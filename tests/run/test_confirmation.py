"""Which confirmation attempts a run schedules (docs/statistics.md "Confirmation reruns"): only
for a task that regressed against the baseline or is under watch, one at a time, numbered after
k, until nothing left could make it significant or the extra attempts run out; and the line
each task of the decision prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from documents_support import report_document, trial_result

from orchestra.config.task import load_task
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.layout import ExistingTrial, plan_inventory
from orchestra.jobs.plan import PlannedJob
from orchestra.paths import PROJECT_ROOT
from orchestra.report.compare.comparison import CompareInputError
from orchestra.report.stats.confirm import Counts
from orchestra.run.confirmation import Baseline, BaselineConfirmation, baseline_of_run

DATASET = PROJECT_ROOT / "tasks" / "buzz-native"
FLIPPED, STEADY = "buzz-native/user-mention", "buzz-native/multiline-message"


def baseline_report(path: Path, tasks: dict[str, tuple[int, int]]) -> Path:
    """A report.json as `orchestra report` writes it, of tasks with these (passes, scored)."""
    report_document(tasks).write(path)
    return path


@pytest.fixture
def job() -> PlannedJob:
    tasks = tuple(load_task(DATASET / name.rpartition("/")[2]) for name in (FLIPPED, STEADY))
    return PlannedJob("job", "regression", 1, tasks)


def confirmation(
    tmp_path: Path, baseline: dict[str, tuple[int, int]], **options: object
) -> BaselineConfirmation:
    config = RunConfig.model_validate(options)
    return BaselineConfirmation(
        config, baseline_of_run(baseline_report(tmp_path / "report.json", baseline))
    )


def scored(task: str, attempt: int, reward: float) -> TrialResult:
    return trial_result(task, attempt, status="scored", reward=reward)


def test_only_the_regressed_task_is_rerun_one_attempt_at_a_time(
    tmp_path: Path, job: PlannedJob
) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (30, 30), STEADY: (30, 30)})
    finished = [scored(FLIPPED, 1, 0.0), scored(STEADY, 1, 1.0)]
    assert confirm.next_slots(job, finished) == [(2, FLIPPED)]
    finished += [scored(FLIPPED, 2, 0.0)]
    assert confirm.next_slots(job, finished) == [(3, FLIPPED)]


def test_a_task_not_yet_finished_or_not_regressed_gets_none(
    tmp_path: Path, job: PlannedJob
) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (1, 1), STEADY: (0, 1)})
    assert confirm.next_slots(job, []) == []
    finished = [scored(FLIPPED, 1, 1.0), scored(STEADY, 1, 0.0)]
    assert confirm.next_slots(job, finished) == []
    assert confirm.confirmations([(job, finished)]) == []


def test_confirmation_stops_once_nothing_left_could_make_it_significant(
    tmp_path: Path, job: PlannedJob
) -> None:
    """Against 1/1, 2 of 2 confirmation attempts: even 2 more failures (2 of 4) are neither a
    regression nor below the 80 % target at α = 0.02, so they are never run."""
    confirm = confirmation(tmp_path, {FLIPPED: (1, 1)})
    finished = [scored(FLIPPED, 1, 0.0), scored(FLIPPED, 2, 1.0), scored(FLIPPED, 3, 1.0)]
    assert confirm.next_slots(job, finished) == []


def test_a_regression_is_confirmed_on_its_fresh_attempts(tmp_path: Path, job: PlannedJob) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (30, 30)})
    finished = [scored(FLIPPED, attempt, 0.0) for attempt in (1, 2, 3, 4, 5)]
    assert confirm.next_slots(job, finished) == []  # the 4 extra attempts are spent
    [found] = confirm.confirmations([(job, finished)])
    assert found.confirmed and found.regression.rejected
    assert found.line().startswith(
        f"confirmed regression: {FLIPPED} passed 0 of 4 confirmation attempts against the "
        "baseline's 30 of 30 (p = "
    )


def test_against_one_attempt_nothing_is_a_regression(tmp_path: Path, job: PlannedJob) -> None:
    """1/1 against 0 of 4: below the 80 % target (a finding), never a regression; it fails
    the run only with fail_below_target."""
    finished = [scored(FLIPPED, attempt, 0.0) for attempt in (1, 2, 3, 4, 5)]
    [found] = confirmation(tmp_path, {FLIPPED: (1, 1)}).confirmations([(job, finished)])
    assert not found.regression.rejected and found.below_target.rejected
    assert not found.confirmed
    assert found.line().endswith("; below the reliability target 80% (p = 0.0016)")
    strict = confirmation(tmp_path, {FLIPPED: (1, 1)}, fail_below_target=True)
    [found] = strict.confirmations([(job, finished)])
    assert found.confirmed


def test_a_flip_that_was_noise_is_not_confirmed(tmp_path: Path, job: PlannedJob) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (30, 30)}, confirm_attempts=3)
    finished = [scored(FLIPPED, 1, 0.0), *(scored(FLIPPED, a, 1.0) for a in (2, 3, 4))]
    assert confirm.next_slots(job, finished) == []
    [found] = confirm.confirmations([(job, finished)])
    assert not found.confirmed
    assert found.line().startswith(
        f"not confirmed: {FLIPPED} passed 3 of 3 confirmation attempts against the baseline's "
        "30 of 30"
    )


def test_a_watched_task_is_confirmed_although_it_passed_tonight(job: PlannedJob) -> None:
    """It failed a first attempt in a recent run of the history (its baseline meets the
    target): its confirmation goes on, and the recent runs' attempts join tonight's."""
    baseline = Baseline(
        {FLIPPED: Counts(29, 30), STEADY: Counts(30, 30)},
        recent={FLIPPED: Counts(1, 4)},
        recent_first_failed=frozenset({FLIPPED}),
    )
    confirm = BaselineConfirmation(RunConfig(), baseline)
    finished = [scored(FLIPPED, 1, 1.0), scored(STEADY, 1, 1.0)]
    assert confirm.next_slots(job, finished) == [(2, FLIPPED)]
    finished += [scored(FLIPPED, a, 0.0) for a in (2, 3, 4, 5)]
    [found] = confirm.confirmations([(job, finished)])
    assert found.evidence.fresh == Counts(1, 8) and found.tonight == Counts(0, 4)
    assert found.confirmed


def test_every_confirmation_slot_is_kept_by_a_resume(tmp_path: Path, job: PlannedJob) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (1, 1)}, confirm_attempts=2)
    assert sorted(confirm.slots(job)) == [(2, STEADY), (2, FLIPPED), (3, STEADY), (3, FLIPPED)]


def test_an_unreadable_baseline_names_its_path(tmp_path: Path) -> None:
    with pytest.raises(CompareInputError, match="nowhere"):
        baseline_of_run(tmp_path / "nowhere")


def test_a_resume_keeps_confirmation_trials_but_never_owes_them() -> None:
    kept = [
        ExistingTrial(f"t{attempt}", Path(f"t{attempt}"), scored(FLIPPED, attempt, 0.0))
        for attempt in (1, 2)
    ]
    inventory = plan_inventory(
        kept, [(1, FLIPPED)], keep_errors=False, optional=[(2, FLIPPED), (3, FLIPPED)]
    )
    assert sorted(inventory.kept) == [(FLIPPED, 1), (FLIPPED, 2)]
    assert (inventory.owed, inventory.superseded) == ([], [])


def test_a_baseline_report_of_an_earlier_version_counts_its_reward_passes() -> None:
    """`--confirm-against` an old report.json (no `successes`): the reward metric's passes."""
    reports = PROJECT_ROOT / "tests" / "fixtures" / "report-json"
    old = baseline_of_run(reports / "2026-12-02.json")
    assert old.counts == baseline_of_run(reports / "2026-12-07.json").counts
    assert old.counts["buzz-native/user-mention"] == Counts(1, 2)
