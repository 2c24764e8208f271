"""The circuit breaker (docs/decisions.md D57): provider errors in a row stop a run from starting
trials.

A provider that is down turns every trial into an error; after `limit` trials in a row end in
provider errors the run starts no new trial, lets the ones in flight finish, and exits 2. The
job stays resumable, and a resume reruns the errored trials.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestra.documents.enums import RUN_STOPPING_ERRORS, ErrorType, TrialStatus
from orchestra.documents.trial import TrialResult


@dataclass
class CircuitBreaker:
    limit: int  # provider errors in a row that trip it; 0 disables it
    in_a_row: list[TrialResult] = field(default_factory=list)

    def record(self, result: TrialResult) -> bool:
        """Count a finished trial (in the order trials finish); True when this one trips it."""
        if result.status is TrialStatus.CANCELLED:
            return False
        info = result.exception_info
        if info is None or ErrorType(info.exception_type).cause != "provider":
            self.in_a_row.clear()
            return False
        self.in_a_row.append(result)
        if ErrorType(info.exception_type) in RUN_STOPPING_ERRORS:
            return True  # no retry or later trial can succeed (a refused key, no credit)
        return self.limit > 0 and len(self.in_a_row) == self.limit

    def message(self) -> str:
        last = self.in_a_row[-1].exception_info
        assert last is not None
        names = ", ".join(r.trial_name for r in self.in_a_row)
        if ErrorType(last.exception_type) in RUN_STOPPING_ERRORS:
            return (
                f"{self.in_a_row[-1].trial_name} ended in {last.exception_type}, which no retry "
                f"or later trial can fix: {last.exception_message.splitlines()[0]}"
            )
        return (
            f"{len(self.in_a_row)} trials in a row ended in provider errors ({names}); "
            f"last: {last.exception_type}: {last.exception_message.splitlines()[0]}"
        )
