"""Options given to `resume` reach the run: the runner, the executors and the trials read the
effective config (the stored one with the command's options on top), while the run keeps its
stored one (orchestrator.md §2.5). Each run here is the driver's own, its trials scripted
(run_support.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from run_support import ScriptedTrials, base_config, benchmark, resume
from runs_support import most_at_once

from orchestra.documents.enums import ErrorType, TrialStatus
from orchestra.documents.job import JobResult
from orchestra.documents.run import RunRecord
from orchestra.documents.trial import TrialResult
from orchestra.run.outcome import RunEnd
from orchestra.run.prepare import plan_resume

pytestmark = pytest.mark.e2e

#: a harness error another attempt may heal (`orchestra.jobs.retries.RETRIED_ERRORS`)
HEALS = ErrorType.STACK_UNAVAILABLE


def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "jobs" / "run"


def results(tmp_path: Path) -> list[TrialResult]:
    """The job's trials as their `result.json` files hold them (superseded ones left out)."""
    job = run_dir(tmp_path) / "run"
    return [TrialResult.load(path) for path in sorted(job.glob("*/result.json"))]


def spans(trials: list[TrialResult]) -> list[tuple[str, str | None]]:
    return [(trial.started_at, trial.finished_at) for trial in trials]


def interrupted_run(tmp_path: Path, relay_url: str, **options: object) -> ScriptedTrials:
    """A run of 4 attempts whose every trial ended in a harness error not rerun (retries 0):
    a resume owes all four."""
    config = base_config(tmp_path, relay_url, attempts=4, retries=0, **options)
    first = ScriptedTrials(errors={attempt: [HEALS] for attempt in range(1, 5)})
    outcome = benchmark(config, first)
    assert outcome.end is RunEnd.TRIAL_ERRORS, outcome
    assert [trial.status for trial in results(tmp_path)] == [TrialStatus.ERROR] * 4
    return first


def test_resume_n_1_of_a_run_started_with_n_4_runs_one_trial_at_a_time(
    relay_url: str, tmp_path: Path
) -> None:
    started = interrupted_run(tmp_path, relay_url, n_concurrent=4)
    assert started.most_in_flight == 4  # what the run's own -n allows, for comparison
    assert RunRecord.load(run_dir(tmp_path) / "run.json").settings.n_concurrent == 4

    resumed = ScriptedTrials()
    outcome = resume(run_dir(tmp_path), resumed, n_concurrent=1)
    assert outcome.end is RunEnd.DONE, outcome
    trials = results(tmp_path)
    assert [trial.status for trial in trials] == [TrialStatus.SCORED] * 4
    assert resumed.most_in_flight == 1 and most_at_once(spans(trials)) == 1
    # the run keeps its own -n: a resume without one runs four at once again
    assert RunRecord.load(run_dir(tmp_path) / "run.json").settings.n_concurrent == 4


def test_resume_without_n_runs_as_many_at_once_as_the_run_was_started_with(
    relay_url: str, tmp_path: Path
) -> None:
    interrupted_run(tmp_path, relay_url, n_concurrent=2)
    resumed = ScriptedTrials()
    assert resume(run_dir(tmp_path), resumed).end is RunEnd.DONE
    assert resumed.most_in_flight == 2 and most_at_once(spans(results(tmp_path))) == 2


def test_resume_keep_errors_of_a_finished_run_starts_nothing_and_without_it_reruns(
    relay_url: str, tmp_path: Path
) -> None:
    config = base_config(tmp_path, relay_url, attempts=3, retries=0)
    assert benchmark(config, ScriptedTrials(errors={2: [HEALS]})).end is RunEnd.TRIAL_ERRORS
    (errored,) = [trial for trial in results(tmp_path) if trial.status is TrialStatus.ERROR]

    kept = ScriptedTrials()
    outcome = resume(run_dir(tmp_path), kept, keep_errors=True)
    assert kept.ran == [] and outcome.end is RunEnd.TRIAL_ERRORS
    assert errored in results(tmp_path)  # the errored trial's result, unchanged

    rerun = ScriptedTrials()
    assert resume(run_dir(tmp_path), rerun).end is RunEnd.DONE
    assert rerun.ran == [2]
    assert [trial.status for trial in results(tmp_path)] == [TrialStatus.SCORED] * 3
    assert (run_dir(tmp_path) / "run" / ".superseded" / errored.trial_name).is_dir()


def test_resume_retries_reruns_a_harness_error_the_run_was_told_not_to(
    relay_url: str, tmp_path: Path
) -> None:
    config = base_config(tmp_path, relay_url, attempts=1, retries=0)
    assert benchmark(config, ScriptedTrials(errors={1: [HEALS]})).end is RunEnd.TRIAL_ERRORS

    # the resumed trial fails once more and heals on the rerun --retries 1 allows
    healing = ScriptedTrials(errors={1: [HEALS]})
    assert resume(run_dir(tmp_path), healing, retries=1).end is RunEnd.DONE
    (trial,) = results(tmp_path)
    assert trial.status is TrialStatus.SCORED and len(trial.retried_from) == 1
    assert healing.ran == [1, 1]


def test_resume_max_cost_usd_stops_starting_trials_at_the_cap(
    relay_url: str, tmp_path: Path
) -> None:
    interrupted_run(tmp_path, relay_url, n_concurrent=1)
    costly = ScriptedTrials(cost_usd=0.5)
    outcome = resume(run_dir(tmp_path), costly, max_cost_usd=0.75)
    assert outcome.end is RunEnd.STOPPED, outcome
    assert costly.ran == [1, 2]  # the second trial reached the cap: no third one started
    (job,) = outcome.jobs
    assert job.stop is not None and job.stop.reason == "cost_cap"
    stored = JobResult.load(run_dir(tmp_path) / "run" / "result.json")
    assert stored.stopped == "cost_cap"


def test_resume_provider_error_limit_stops_the_run(relay_url: str, tmp_path: Path) -> None:
    interrupted_run(tmp_path, relay_url, n_concurrent=1, provider_error_limit=0)
    failing = ScriptedTrials(errors={a: [ErrorType.PROVIDER_UNAVAILABLE] for a in range(1, 5)})
    outcome = resume(run_dir(tmp_path), failing, provider_error_limit=2, retries=0)
    assert outcome.end is RunEnd.STOPPED, outcome
    assert failing.ran == [1, 2]
    (job,) = outcome.jobs
    assert job.stop is not None and job.stop.reason == "circuit_breaker"


def test_resume_trial_settings_reach_every_trial(relay_url: str, tmp_path: Path) -> None:
    interrupted_run(tmp_path, relay_url)
    bin_dir = Path(sys.executable).parent  # this environment's buzz-acp, buzz-agent, ...
    resumed = ScriptedTrials()
    given = {"timeout_multiplier": 2.0, "settle_ms": 0, "buzz_bin_dir": bin_dir}
    assert resume(run_dir(tmp_path), resumed, **given).end is RunEnd.DONE
    assert len(resumed.settings) == 4
    for settings in resumed.settings:
        assert (settings.timeout_multiplier, settings.settle_ms) == (2.0, 0)
        assert settings.buzz_bin_dir == bin_dir
    (trial, *_) = results(tmp_path)
    config = json.loads((run_dir(tmp_path) / "run" / trial.trial_name / "config.json").read_text())
    assert config["timeouts"]["verifier_seconds"] == 2 * 30.0  # user-mention's verifier: 30 s
    # the run keeps what it was started with
    assert RunRecord.load(run_dir(tmp_path) / "run.json").settings.trial.timeout_multiplier == 1.0


def test_resume_report_writes_the_runs_reports(relay_url: str, tmp_path: Path) -> None:
    interrupted_run(tmp_path, relay_url)
    assert not (run_dir(tmp_path) / "report.json").exists()
    outcome = resume(run_dir(tmp_path), ScriptedTrials(), report=True)
    assert outcome.end is RunEnd.DONE
    (files,) = outcome.reports
    assert files.report_json == run_dir(tmp_path) / "report.json" and files.report_json.is_file()
    # not stored: a later resume without --report rewrites the report only because it exists
    assert RunRecord.load(run_dir(tmp_path) / "run.json").settings.report is False


def test_a_finished_run_scope_owes_its_errored_trial_unless_errors_are_kept(
    relay_url: str, tmp_path: Path
) -> None:
    """`RunScope.owed` is what the first line of a resume says ("0 of 3 trials owed")."""
    config = base_config(tmp_path, relay_url, attempts=3, retries=0)
    benchmark(config, ScriptedTrials(errors={3: [HEALS]}))
    scope = plan_resume(run_dir(tmp_path), {}).scope
    assert (scope.owed(keep_errors=True), scope.owed(keep_errors=False)) == (0, 1)
    assert scope.n_planned == 3
    assert scope.describe(0).startswith(f"resuming run {run_dir(tmp_path)} (started ")
    assert scope.describe(0).endswith(": 0 of 3 trials owed")
    assert scope.report_dirs(requested=False) == []
    assert scope.report_dirs(requested=True) == [([run_dir(tmp_path) / "run"], run_dir(tmp_path))]
