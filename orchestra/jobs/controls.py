"""What may stop a run early or rerun a trial (docs/decisions.md D57): the circuit breaker, the cost
cap and the retries of harness errors, shared by the jobs of one plan."""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestra.documents.job import JobStopReason
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.breaker import CircuitBreaker
from orchestra.jobs.cost_cap import CostCap
from orchestra.jsonio import utc_timestamp


@dataclass(frozen=True)
class Stop:
    """Why the run starts no more trials (the job `result.json`'s `stopped` and its detail)."""

    reason: JobStopReason
    message: str
    at: str
    spent_usd: float | None = None  # the run's spend, for `cost_cap`


@dataclass
class RunState:
    """What changes while a run goes: the breaker's count, the spend, why it stopped. Made from
    the limits in the run's config (`RunConfig`), shared by the jobs of one plan."""

    breaker: CircuitBreaker
    cost_cap: CostCap
    stop: Stop | None = None
    counted: set[str] = field(default_factory=set)  # trials already counted as finished
    #: the jobs directory could not be written (a full disk): the run ends as if interrupted
    fault: OSError | None = None

    @classmethod
    def of(cls, config: RunConfig) -> RunState:
        return cls(
            CircuitBreaker(config.provider_error_limit),
            CostCap(config.max_cost_usd, config.hard_cost_cap),
        )

    def trial_finished(self, result: TrialResult) -> Stop | None:
        """Count a trial that reached a terminal status; the stop it causes, if it is the
        first one."""
        if result.trial_name in self.counted:
            return None
        self.counted.add(result.trial_name)
        tripped = self.breaker.record(result)
        capped = self.cost_cap.finished(result)
        if tripped:
            return self._stop("circuit_breaker", self.breaker.message())
        if capped:
            return self._cap_reached()
        return None

    def live_cost(self, trial_name: str, cost_usd: float) -> Stop | None:
        if self.cost_cap.live(trial_name, cost_usd):
            return self._cap_reached()
        return None

    def _cap_reached(self) -> Stop | None:
        return self._stop("cost_cap", self.cost_cap.message(), self.cost_cap.spent_usd)

    def _stop(self, reason: JobStopReason, message: str, spent: float | None = None) -> Stop | None:
        if self.stop is not None:
            return None
        self.stop = Stop(reason, message, utc_timestamp(), spent)
        return self.stop
