"""One backoff schedule: how long to wait before each retry.

A schedule is either a table of delays whose last one repeats (the documents give most of
them that way: agent-harness.md §1.2 step 4, §1.3, §1.8) or an exponential `first × factor^(k−1)`
capped at `cap`; optionally spread by a uniform random factor (`jitter`), raised to a hint the
other side gave, and limited to `limit`. Retries count from 1: `delay(1)` is the wait before
the first retry.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    first: float = 1.0
    factor: float = 2.0
    cap: float = math.inf
    #: Explicit delays for retries 1, 2, …; later retries repeat the last. Wins over the formula.
    table: tuple[float, ...] = ()
    #: The range of the random factor each delay is multiplied by; None: no jitter.
    jitter: tuple[float, float] | None = None
    #: The most any delay may be, hints included.
    limit: float = math.inf

    @classmethod
    def steps(cls, *delays: float) -> Backoff:
        """`Backoff.steps(1, 2, 4, 8, 15)`: 1, 2, 4, 8, 15, 15, … s."""
        if not delays:
            raise ValueError("a backoff table needs at least one delay")
        return cls(table=tuple(delays))

    def base(self, retry: int) -> float:
        """The schedule's own delay before retry `retry` (≥ 1), before jitter and hints."""
        if self.table:
            return self.table[min(retry, len(self.table)) - 1]
        return min(self.cap, self.first * self.factor ** (retry - 1))

    def delay(
        self,
        retry: int,
        *,
        raise_to: float | None = None,
        at_least: float | None = None,
        spread: float | None = None,
    ) -> float:
        """Seconds to wait before retry `retry` (≥ 1).

        `raise_to`: a hint that replaces a shorter base delay and is jittered like it (the
        relay's `retry in N s`, orchestrator.md §7.3); `at_least`: a minimum applied after the
        jitter (an HTTP `Retry-After`, agent-harness.md §2.8); `spread`: the jitter factor to
        use instead of a random draw (for tests). A table delay without jitter or hints is
        returned as written.
        """
        delay = self.base(retry)
        if raise_to is not None:
            delay = max(delay, raise_to)
        if spread is None and self.jitter is not None:
            spread = random.uniform(*self.jitter)
        if spread is not None:
            delay *= spread
        if at_least is not None:
            delay = max(delay, at_least)
        return min(delay, self.limit)
