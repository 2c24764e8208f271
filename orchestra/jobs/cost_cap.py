"""The run's cost cap (`--max-cost-usd`, docs/decisions.md D57).

The spend is the cost of the trials this run finished plus the live usage of the agents still
running (their event logs, priced as §7.14). Once it reaches the cap the run starts no new
trial; the ones in flight finish (or, with `--hard-cost-cap`, are cancelled).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestra.documents.trial import TrialResult


@dataclass
class CostCap:
    max_cost_usd: float | None  # None: no cap
    hard: bool = False
    finished_usd: float = 0.0
    live_usd: dict[str, float] = field(default_factory=dict)  # trial name -> cost so far

    @property
    def spent_usd(self) -> float:
        return self.finished_usd + sum(self.live_usd.values())

    @property
    def reached(self) -> bool:
        return self.max_cost_usd is not None and self.spent_usd >= self.max_cost_usd

    def live(self, trial_name: str, cost_usd: float) -> bool:
        """An in-flight trial's cost so far; True when the cap is reached."""
        self.live_usd[trial_name] = cost_usd
        return self.reached

    def finished(self, result: TrialResult) -> bool:
        """A trial reached a terminal status; True when the cap is reached."""
        self.live_usd.pop(result.trial_name, None)
        self.finished_usd += result.cost_usd or 0.0
        return self.reached

    def message(self) -> str:
        return (
            f"the run's cost reached ${self.spent_usd:.4f} (--max-cost-usd {self.max_cost_usd:g})"
        )
