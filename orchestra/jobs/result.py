"""The job's `result.json` (orchestrator.md §10.4), kept current as its trials change state.

Counts and aggregates are running sums (`ConditionTally`), updated in O(1) per trial change.
The file lists every trial, so each rewrite costs O(trials): with a `schedule` (the driver's
event loop) rewrites are coalesced, so a job's rewriting costs O(1) per trial, whatever its
size: a state change writes at once when the last rewrite is at least `MIN_INTERVAL_SECONDS`
and `WRITE_COST_FACTOR` times its own duration ago, else once that time is up, with every
change made meanwhile. A job whose trials are all terminal, an early stop and the end of the
job write at once. A resume rebuilds everything from the trial directories (§2.5), so a file a
crash left behind by a fraction of a second loses nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from orchestra.documents.enums import TrialStatus
from orchestra.documents.job import JobConfig, JobResult, JobStats, JobTrialEntry
from orchestra.documents.trial import TrialResult
from orchestra.jobs.aggregate import ConditionTally, JobRecord
from orchestra.jobs.controls import RunState
from orchestra.jobs.tally import Counted
from orchestra.jsonio import utc_timestamp
from orchestra.paths import JobPaths

#: the shortest time between two coalesced rewrites
MIN_INTERVAL_SECONDS = 0.25
#: a rewrite is followed by at least this many times its duration without one (so a large job
#: spends at most about 1/20 of its time rewriting the file)
WRITE_COST_FACTOR = 20


class Timer(Protocol):
    def cancel(self) -> None: ...


#: run a callback after a delay in seconds (`asyncio.AbstractEventLoop.call_later`)
Schedule = Callable[[float, Callable[[], None]], Timer]


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
        run_state: RunState | None = None,
        *,
        schedule: Schedule | None = None,
        on_fault: Callable[[OSError], None] | None = None,
    ) -> None:
        """`schedule` None: every state change is written at once (offline writers, tests).
        `on_fault`: told instead of raising when the file cannot be written (a full disk), as a
        coalesced rewrite runs where nobody could catch it."""
        self.paths = paths
        self.config = config
        self.n_planned = n_planned
        self.controls = run_state  # what may stop the run early (its `stopped` record)
        self.trials: dict[str, Counted] = {}  # trial name -> what its latest result counts
        self.tally = ConditionTally()
        self.tally.plan(JobRecord.from_config(config, paths.root))
        self._states: dict[str, tuple[TrialStatus, str | None]] = {}  # last seen per trial
        self._schedule = schedule
        self._on_fault = on_fault
        self._pending: Timer | None = None  # the coalesced rewrite to come
        self._next_write = 0.0  # monotonic time from which a state change writes at once
        previous = JobResult.load_if_readable(paths.result_json)  # a resume keeps started_at
        self.started_at = previous.started_at if previous is not None else utc_timestamp()

    def seed(self, results: Iterable[TrialResult]) -> None:
        for result in results:
            self._put(result)

    def _put(self, result: TrialResult) -> None:
        previous = self.trials.get(result.trial_name)
        if previous is not None:
            self.tally.remove(previous)
        counted = self.trials[result.trial_name] = Counted.of(result)
        self.tally.add(counted, self.config.plan.attempts)

    def update(self, result: TrialResult) -> None:
        """Record a trial's latest result; the file is rewritten when the trial's state
        changed (a trial reports every phase change)."""
        self._put(result)
        name, state = result.trial_name, trial_state(result)
        if self._states.get(name) != state:
            self._states[name] = state
            self._state_changed()

    def forget(self, trial_name: str) -> None:
        """A trial moved to `.superseded/` (rerun in the job) is no longer the job's."""
        previous = self.trials.pop(trial_name, None)
        if previous is not None:
            self.tally.remove(previous)
        self._states.pop(trial_name, None)

    def _state_changed(self) -> None:
        if self._schedule is None or self.finished:
            self.write()
        elif self._pending is None:
            wait = self._next_write - time.monotonic()
            if wait <= 0:
                self.write()
            else:
                self._pending = self._schedule(wait, self.write)

    @property
    def finished(self) -> bool:
        """Every planned trial has a terminal status."""
        running = self.tally.count(TrialStatus.RUNNING)
        return running == 0 and len(self.trials) >= self.n_planned

    def document(self) -> JobResult:
        trials = self.trials.values()
        total = self.tally.total()
        counts = total.statuses
        usage = total.usage()
        stop = self.controls.stop if self.controls is not None else None
        return JobResult(
            id=self.config.id,
            job_name=self.config.job_name,
            started_at=self.started_at,
            updated_at=utc_timestamp(),
            finished_at=utc_timestamp() if self.finished else None,
            condition=self.config.manifest.condition,
            manifest_sha256=self.config.manifest.sha256,
            n_planned=self.n_planned,
            stats=JobStats(
                n_scored=counts[TrialStatus.SCORED],
                n_errors=counts[TrialStatus.ERROR],
                n_cancelled=counts[TrialStatus.CANCELLED],
                n_running=counts[TrialStatus.RUNNING],
                n_pending=max(0, self.n_planned - len(self.trials)),
                tokens=usage.tokens,
                cost_usd=usage.cost_usd,
            ),
            aggregates=self.tally.layers(),
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
        """Rewrite the file now (and drop a coalesced rewrite still to come)."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        began = time.monotonic()
        try:
            self.document().write(self.paths.result_json)
        except OSError as error:
            if self._on_fault is None:
                raise
            self._on_fault(error)
            return
        ended = time.monotonic()
        self._next_write = ended + max(MIN_INTERVAL_SECONDS, WRITE_COST_FACTOR * (ended - began))
