"""Every task's negative solution (tests/fixtures/negative-solutions/<task>.sh) replayed by the
oracle through the real agent tree, relay and verifier: one job over ten task copies whose
`solution/solve.sh` is the negative script. Each must score reward 0.0, with the metric its
`# caught-by:` header names at 0.0 and every `# expect:` line holding."""

import shutil
from pathlib import Path

import pytest
from e2e_jobs import NEGATIVE_SOLUTIONS, JobRun, copy_dataset, dataset_task_names
from solution_headers import read_expectation

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def negative_job(run_job, scratch: Path, relay_url: str, embedded_pg) -> JobRun:
    tasks = copy_dataset(scratch / "negative-tasks")
    for name in dataset_task_names():
        shutil.copyfile(NEGATIVE_SOLUTIONS / f"{name}.sh", tasks / name / "solution" / "solve.sh")
    stack = ["--stack", "external", "--relay-url", relay_url]
    database = ["--database-url", embedded_pg.new_database_url()]
    return run_job(tasks, "negative-solutions", *stack, *database)


def test_every_task_has_a_negative_solution() -> None:
    scripts = sorted(p.stem for p in NEGATIVE_SOLUTIONS.glob("*.sh"))
    assert scripts == dataset_task_names()


def test_every_negative_trial_is_scored(negative_job: JobRun, record_property) -> None:
    record_property("job_wall_seconds", round(negative_job.wall_seconds, 1))
    assert negative_job.returncode == 0, negative_job.output
    statuses = {name: r["status"] for name, r in negative_job.results.items()}
    assert statuses == dict.fromkeys(dataset_task_names(), "scored"), negative_job.output


def test_failed_trials_round_trip_through_the_models(
    negative_job: JobRun, document_round_trip
) -> None:
    round_trip = document_round_trip(negative_job.job_dir)
    assert round_trip.checked == 2 + 2 * len(dataset_task_names())
    assert round_trip.diffs == {}


@pytest.mark.parametrize("task", dataset_task_names())
def test_negative_solution_is_caught_by_its_metric(negative_job: JobRun, task: str) -> None:
    negative = read_expectation(NEGATIVE_SOLUTIONS / f"{task}.sh")
    result = negative_job.results.get(task)
    assert result is not None and result["status"] == "scored", negative_job.output
    rewards = result["rewards"]
    assert rewards["reward"] == 0.0 and result["reward"] == 0.0
    assert rewards[negative.caught_by] == 0.0, negative.caught_by
    assert negative.problems(rewards) == {}, f"{task}: rewards {rewards}"
