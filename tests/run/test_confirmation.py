"""Which confirmation attempts a run schedules (issue 29 item 5): only for a task that regressed
against the baseline, one at a time, numbered after k, until the verdict cannot change or the
extra attempts run out; and the line each verdict prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from documents_support import trial_result

from orchestra.config.task import load_task
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.layout import ExistingTrial, plan_inventory
from orchestra.jobs.plan import PlannedJob
from orchestra.paths import PROJECT_ROOT
from orchestra.report.compare.comparison import CompareInputError
from orchestra.run.confirmation import BaselineConfirmation

DATASET = PROJECT_ROOT / "tasks" / "buzz-native"
FLIPPED, STEADY = "buzz-native/user-mention", "buzz-native/multiline-message"


def baseline_report(path: Path, tasks: dict[str, tuple[int, int]]) -> Path:
    """A report.json as `orchestra report` writes it, reduced to what a comparison reads:
    per task (passes, scored)."""
    rows = {
        name: {"pass_rate": passes / scored, "scored": scored, "successes": passes}
        for name, (passes, scored) in tasks.items()
    }
    report = {"conditions": [{"condition": "c", "layers": {"regression": {"tasks": rows}}}]}
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


@pytest.fixture
def job() -> PlannedJob:
    tasks = tuple(load_task(DATASET / name.rpartition("/")[2]) for name in (FLIPPED, STEADY))
    return PlannedJob("job", "regression", 1, tasks)


def confirmation(
    tmp_path: Path, baseline: dict[str, tuple[int, int]], **options: object
) -> BaselineConfirmation:
    config = RunConfig.model_validate(options)
    return BaselineConfirmation(config, baseline_report(tmp_path / "report.json", baseline))


def scored(task: str, attempt: int, reward: float) -> TrialResult:
    return trial_result(task, attempt, status="scored", reward=reward)


def test_only_the_regressed_task_is_rerun_one_attempt_at_a_time(
    tmp_path: Path, job: PlannedJob
) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (1, 1), STEADY: (1, 1)})
    finished = [scored(FLIPPED, 1, 0.0), scored(STEADY, 1, 1.0)]
    assert confirm.next_slots(job, finished) == [(2, FLIPPED)]
    finished += [scored(FLIPPED, 2, 0.0)]
    assert confirm.next_slots(job, finished) == [(3, FLIPPED)]


def test_a_task_not_yet_finished_or_not_regressed_gets_none(
    tmp_path: Path, job: PlannedJob
) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (1, 1), STEADY: (0, 1)})
    assert confirm.next_slots(job, []) == []
    assert confirm.next_slots(job, [scored(FLIPPED, 1, 1.0), scored(STEADY, 1, 0.0)]) == []
    assert confirm.confirmations(job, [scored(FLIPPED, 1, 1.0), scored(STEADY, 1, 0.0)]) == []


def test_confirmation_stops_once_the_verdict_cannot_change(tmp_path: Path, job: PlannedJob) -> None:
    """1/1 against 0 of 4 fails the 80 % target whatever a fifth attempt does (0 or 1 of 5:
    p ≤ 0.007), so the fifth is never run."""
    confirm = confirmation(tmp_path, {FLIPPED: (1, 1)})
    finished = [scored(FLIPPED, attempt, 0.0) for attempt in (1, 2, 3, 4)]
    assert confirm.next_slots(job, finished) == []
    [found] = confirm.confirmations(job, finished)
    assert found.confirmed and found.verdict.decided_by == "reliability target"
    assert found.line().startswith(
        f"confirmed regression: {FLIPPED} (below contract; passed 0 of 3 confirmation attempts;"
    )


def test_a_flip_that_was_noise_is_not_confirmed(tmp_path: Path, job: PlannedJob) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (1, 1)}, confirm_attempts=3)
    finished = [scored(FLIPPED, 1, 0.0), *(scored(FLIPPED, a, 1.0) for a in (2, 3, 4))]
    assert confirm.next_slots(job, finished) == []  # the 3 extra attempts are spent
    [found] = confirm.confirmations(job, finished)
    assert not found.confirmed
    assert found.line() == f"not confirmed: {FLIPPED} passed 3 of 3 confirmation attempts"


def test_every_confirmation_slot_is_kept_by_a_resume(tmp_path: Path, job: PlannedJob) -> None:
    confirm = confirmation(tmp_path, {FLIPPED: (1, 1)}, confirm_attempts=2)
    assert sorted(confirm.slots(job)) == [(2, STEADY), (2, FLIPPED), (3, STEADY), (3, FLIPPED)]


def test_an_unreadable_baseline_names_its_path(tmp_path: Path) -> None:
    with pytest.raises(CompareInputError, match="nowhere"):
        BaselineConfirmation(RunConfig(), tmp_path / "nowhere")


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
