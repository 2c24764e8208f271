"""The job's `result.json`, rewritten after every trial state change (orchestrator.md §10.4)."""

from __future__ import annotations

from collections.abc import Iterable

from orchestra.documents.enums import TrialStatus
from orchestra.documents.job import JobConfig, JobResult, JobStats, JobTrialEntry
from orchestra.documents.trial import TrialResult
from orchestra.jobs.aggregate import JobRecord, aggregate, token_totals
from orchestra.jobs.controls import RunControls
from orchestra.jsonio import utc_timestamp
from orchestra.paths import JobPaths


def trial_state(result: TrialResult) -> tuple[TrialStatus, str | None]:
    """A trial's state as the job document tracks it: the file is rewritten when it changes
    (§10.1: "after every trial state change"); phases, and the reward and tokens recorded
    before the trial ends, reach it with the trial's next state change."""
    return (result.status, result.finished_at)


class JobResultRecorder:
    def __init__(
        self,
        paths: JobPaths,
        config: JobConfig,
        n_planned: int,
        controls: RunControls | None = None,
    ) -> None:
        self.paths = paths
        self.config = config
        self.n_planned = n_planned
        self.controls = controls  # what may stop the run early (its `stopped` record)
        self.trials: dict[str, TrialResult] = {}  # trial name -> latest result
        self._states: dict[str, tuple[TrialStatus, str | None]] = {}  # last written per trial
        previous = JobResult.load_if_readable(paths.result_json)  # a resume keeps started_at
        self.started_at = previous.started_at if previous is not None else utc_timestamp()

    def seed(self, results: Iterable[TrialResult]) -> None:
        for result in results:
            self.trials[result.trial_name] = result

    def update(self, result: TrialResult) -> None:
        """Record a trial's latest result; rewrite the file when the trial's state changed.

        A trial reports every phase change; the rewrite, with its aggregation and fsync,
        happens only for a new state.
        """
        name = result.trial_name
        self.trials[name] = result
        state = trial_state(result)
        if self._states.get(name) != state:
            self._states[name] = state
            self.write()

    def forget(self, trial_name: str) -> None:
        """A trial moved to `.superseded/` (rerun in the job) is no longer the job's."""
        self.trials.pop(trial_name, None)
        self._states.pop(trial_name, None)

    def record(self) -> JobRecord:
        record = JobRecord.from_config(self.config, self.paths.root)
        record.trials = list(self.trials.values())
        return record

    def document(self) -> JobResult:
        trials = list(self.trials.values())
        counts = {status: sum(1 for t in trials if t.status is status) for status in TrialStatus}
        running = counts[TrialStatus.RUNNING]
        finished = len(trials) - running >= self.n_planned and running == 0
        conditions = aggregate([self.record()]).conditions
        tokens, cost = token_totals(trials)
        stop = self.controls.stop if self.controls is not None else None
        return JobResult(
            id=self.config.id,
            job_name=self.config.job_name,
            started_at=self.started_at,
            updated_at=utc_timestamp(),
            finished_at=utc_timestamp() if finished else None,
            condition=self.config.manifest.condition,
            manifest_sha256=self.config.manifest.sha256,
            n_planned=self.n_planned,
            stats=JobStats(
                n_scored=counts[TrialStatus.SCORED],
                n_errors=counts[TrialStatus.ERROR],
                n_cancelled=counts[TrialStatus.CANCELLED],
                n_running=running,
                n_pending=max(0, self.n_planned - len(trials)),
                tokens=tokens,
                cost_usd=cost,
            ),
            aggregates=conditions[0].layers if conditions else {},
            trials=[
                JobTrialEntry(
                    trial_name=t.trial_name,
                    task_name=t.task_name,
                    attempt=t.attempt,
                    status=t.status,
                    reward=t.reward,
                )
                for t in sorted(trials, key=lambda t: (t.attempt, t.task_name, t.trial_name))
            ],
            stopped=stop.reason if stop else None,
            stopped_at=stop.at if stop else None,
            stop_message=stop.message if stop else None,
            spent_usd=(
                self.controls.cost_cap.spent_usd
                if stop and stop.reason == "cost_cap" and self.controls
                else None
            ),
        )

    def write(self) -> None:
        self.document().write(self.paths.result_json)
