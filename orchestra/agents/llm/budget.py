"""One retry budget for everything a buzz-agent process retries (docs/decisions.md D79).

buzz-agent serves one agent of one trial, so its process is the trial's agent: every retried
LLM request of every call and every turn draws on one budget, a count of retries and a
wall-clock cap measured from the first retried failure. When either runs out the call fails
as not retryable, so buzz-acp gives the turn up instead of retrying it, and a provider that
always fails ends the trial in seconds, not minutes. A success refills the budget: a provider
that recovers is not penalised for its earlier failures.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

#: Defaults of `BUZZ_AGENT_RETRY_BUDGET` and `BUZZ_AGENT_RETRY_BUDGET_SECS`.
DEFAULT_RETRIES = 4
DEFAULT_SECS = 40
_USED_UP = re.compile(r"\(retry budget \d+/\d+ used up\)")


def used_up_note(spent: str) -> str:
    """What ends the detail of a failure the budget no longer retries."""
    return f"(retry budget {spent} used up)"


def budget_used_up(message: str) -> bool:
    """A failure's message says the agent's retry budget was used up on it: the agent has
    retried it as long as a retry could help (the orchestrator does not rerun the trial)."""
    return _USED_UP.search(message) is not None


@dataclass
class RetryBudget:
    retries: int  # retried requests allowed in a row of failures; 0 disables retrying
    secs: float  # wall-clock from the first failure of the row in which retries may start
    used: int = 0
    _first_failure: float | None = field(default=None, repr=False)

    def take(self, delay: float) -> bool:
        """Spend one retry that starts after `delay` seconds; False when it would overrun."""
        now = time.monotonic()
        if self._first_failure is None:
            self._first_failure = now
        if self.used >= self.retries or now + delay - self._first_failure > self.secs:
            return False
        self.used += 1
        return True

    def succeeded(self) -> None:
        self.used = 0
        self._first_failure = None

    def spent(self) -> str:
        """`n/N` for logs and progress, e.g. `2/4`."""
        return f"{self.used}/{self.retries}"
