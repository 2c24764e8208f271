"""Three nightly runs of one condition, fabricated from documents (no trial runs), and the
results database built from them.

The runs are made by the orchestrator's own `choose_run` (`runs_support.start_run`) and their
job directories by `jobs_builder` (tests/report), which writes every document through its model.
Across the runs: `user-mention` always passes; `reply-to-thread` passes, passes, then fails
(flipped); `multiline-message` passes, is mixed (2 attempts), then fails (flaky since run 2);
`memory-retrieval` errs in run 1 and passes after; run 3 has a trajectory with tool calls.
"""

import sqlite3
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

REPORT_TESTS = str(Path(__file__).resolve().parent.parent / "report")
if REPORT_TESTS not in sys.path:
    sys.path.insert(0, REPORT_TESTS)

from jobs_builder import TrialSpec, build_job  # noqa: E402
from runs_support import DATASET, run_request, start_run  # noqa: E402
from test_html_trajectory import sample_trajectory  # noqa: E402

from orchestra.jsonio import write_json_atomic  # noqa: E402
from orchestra.paths import JobPaths, RunPaths  # noqa: E402
from orchestra.results.database import add_directory  # noqa: E402
from orchestra.results.schema import open_database  # noqa: E402

PASS = {"reward": 1.0, "answer_correct": 1.0}
FAIL = {"reward": 0.0, "answer_correct": 0.0}
NIGHTS = (
    datetime(2026, 12, 1, 2, 0, tzinfo=UTC),
    datetime(2026, 12, 2, 2, 0, tzinfo=UTC),
    datetime(2026, 12, 3, 2, 0, tzinfo=UTC),
)


def night_trials(night: int) -> list[TrialSpec]:
    """The trials of night 0, 1 or 2 (see the module's docstring)."""
    flipped = PASS if night < 2 else FAIL
    flaky = [[PASS, PASS], [PASS, FAIL], [FAIL, FAIL]][night]
    trials = [
        TrialSpec("user-mention", rewards=PASS, cost_usd=0.01 * (night + 1)),
        TrialSpec("reply-to-thread", rewards=flipped, cost_usd=0.02),
        TrialSpec("multiline-message", rewards=flaky[0], cost_usd=0.03),
        TrialSpec("multiline-message", attempt=2, rewards=flaky[1], cost_usd=0.03),
    ]
    if night == 0:
        trials.append(
            TrialSpec("memory-retrieval", status="error", exception_type="AgentReadinessTimeout",
                      stop_reason=None, cost_usd=0.0, tokens=(0, 0, 0))
        )  # fmt: skip
    else:
        trials.append(TrialSpec("memory-retrieval", rewards=PASS, cost_usd=0.05))
    return trials


def build_night(jobs_dir: Path, night: int) -> Path:
    record = start_run(
        jobs_dir,
        run_request(DATASET / "user-mention"),
        NIGHTS[night],
        run_name=f"nightly-{night + 1}",
    )
    run_dir = jobs_dir / record.run_name
    # `choose_run` stamps the run with the wall clock; a nightly run starts at its night
    started = NIGHTS[night].strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    record.model_copy(update={"created_at": started}).write(RunPaths(run_dir).run_json)
    job_dir = build_job(run_dir, record.jobs[0].job_name, night_trials(night), attempts=2)
    if night == 2:
        first = sorted(p.name for p in job_dir.iterdir() if p.name.startswith("user-mention"))[0]
        path = JobPaths(job_dir).trial(first).trajectory("solo-1")
        write_json_atomic(path, sample_trajectory().to_document())
    return run_dir


@pytest.fixture(scope="session")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    jobs_dir = tmp_path_factory.mktemp("nightly") / "jobs"
    return [build_night(jobs_dir, night) for night in range(3)]


@pytest.fixture
def results_db(three_runs: list[Path], tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = open_database(tmp_path / "results.sqlite", create=True)
    for run in three_runs:
        add_directory(connection, run)
    yield connection
    connection.close()
