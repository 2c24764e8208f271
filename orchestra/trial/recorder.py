"""A trial's status, phase and phase clock, and its `trial.log` (orchestrator.md §10.3).

What `result.json` adds to the trial's state; `orchestra.trial.record` renders the document
from both.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO

from orchestra.documents.enums import Phase, TrialStatus
from orchestra.documents.trial import PhaseTiming, Timings, TrialResult
from orchestra.jsonio import utc_timestamp
from orchestra.paths import TrialPaths


class TrialRecorder:
    """Status, phase and phase timings of one trial; writes its documents and its log."""

    def __init__(self, paths: TrialPaths, on_update: Callable[[TrialResult], None]) -> None:
        self.paths = paths
        self._on_update = on_update
        self.status = TrialStatus.RUNNING
        self.phase = Phase.SETUP
        self.started_at = utc_timestamp()
        self.finished_at: str | None = None
        #: each phase entered so far; a closed phase's timing is replaced, never changed, since
        #: documents already handed to `on_update` hold the earlier one
        self._timings: dict[Phase, PhaseTiming] = {}
        self._phase_clock: dict[Phase, float] = {}
        self._log_file: TextIO | None = None

    def log(self, line: str) -> None:
        """Append to trial.log; the file stays open (line-buffered) until the trial finishes."""
        if self._log_file is None or self._log_file.closed:
            self.paths.root.mkdir(parents=True, exist_ok=True)
            self._log_file = self.paths.trial_log.open("a", encoding="utf-8", buffering=1)
        stamp = datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3]
        self._log_file.write(f"{stamp} {line}\n")

    def enter(self, phase: Phase) -> None:
        """Close the current phase's timing and open `phase`."""
        self._close_phase()
        self._phase_clock[phase] = time.monotonic()
        self._timings[phase] = PhaseTiming(started_at=utc_timestamp())
        self.phase = phase
        self.log(f"phase {phase}")

    def _close_phase(self) -> None:
        timing = self._timings.get(self.phase)
        if timing is not None and timing.finished_at is None:
            self._timings[self.phase] = PhaseTiming(
                started_at=timing.started_at,
                finished_at=utc_timestamp(),
                seconds=round(time.monotonic() - self._phase_clock[self.phase], 6),
            )

    def timings(self, agent_active_seconds: float) -> Timings:
        """The `timings` object: each phase entered so far, and the agents' active time."""
        entered = self._timings
        return Timings(
            setup=entered.get(Phase.SETUP),
            agent=entered.get(Phase.AGENT),
            teardown=entered.get(Phase.TEARDOWN),
            evidence=entered.get(Phase.EVIDENCE),
            verify=entered.get(Phase.VERIFY),
            finalize=entered.get(Phase.FINALIZE),
            agent_active_seconds=agent_active_seconds,
        )

    def finish(self, status: TrialStatus) -> None:
        self._close_phase()
        self.status = status
        self.finished_at = utc_timestamp()

    def write(self, result: TrialResult) -> None:
        result.write(self.paths.result_json)
        self._on_update(result)

    def close(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
