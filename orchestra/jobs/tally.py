"""Running sums of trial results, for the aggregation of §11.1 in O(1) per trial change.

A `Tally` holds what the summary reports about a set of trials as counts and sums that a
trial's result adds to and takes back from; a `ConditionTally` keeps one per (layer, task) of a
condition. `aggregate` builds them from scratch, the job `result.json` keeps them up to date
while the trials run, so both compute the same numbers in the same way. Float sums are exact
(`ExactSum`): adding and removing in any order ends at the value a fresh sum of the same
trials gives, correctly rounded once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction

from orchestra.documents.enums import Flag, TrialStatus
from orchestra.documents.summary import Rates, UsageSummary
from orchestra.documents.trial import TokenCounts, TrialResult

SUCCESS_THRESHOLD = 1.0 - 1e-9
#: The token counts summed, in `Counted.tokens` and `Tally.tokens` order.
TOKEN_FIELDS = ("input", "cached_input", "output", "cache_write_input")


def metric_passed(value: float | None) -> bool:
    """A metric (or the reward) holds when it is ≥ 1.0 − 1e-9, as §11.1 defines success."""
    return value is not None and value >= SUCCESS_THRESHOLD


def succeeded(trial: TrialResult) -> bool:
    """Scored with a reward that holds (§11.1)."""
    return trial.status is TrialStatus.SCORED and metric_passed(trial.reward)


@dataclass
class ExactSum:
    """A sum of floats kept exactly; non-finite terms (only in a hand-edited document) are
    counted apart and make the value what a float sum of them would be."""

    finite: Fraction = field(default_factory=Fraction)
    special: dict[str, int] = field(default_factory=dict)  # "nan", "inf", "-inf" -> count

    def add(self, value: float, sign: int = 1) -> None:
        if math.isfinite(value):
            self.finite += sign * Fraction(value)
        else:
            self._count("nan" if math.isnan(value) else str(value), sign)

    def _count(self, key: str, sign: int) -> None:
        count = self.special.get(key, 0) + sign
        if count:
            self.special[key] = count
        else:
            del self.special[key]

    def merge(self, other: ExactSum) -> None:
        self.finite += other.finite
        for key, count in other.special.items():
            self._count(key, count)

    @property
    def value(self) -> float:
        keys = set(self.special)
        if not keys:
            return float(self.finite)
        if "nan" in keys or len(keys) == 2:  # inf - inf
            return math.nan
        return float(keys.pop())


def token_tuple(tokens: TokenCounts) -> tuple[int, int, int, int]:
    """The counts in `TOKEN_FIELDS` order."""
    return tokens.input, tokens.cached_input, tokens.output, tokens.cache_write_input


@dataclass(frozen=True, slots=True)
class Counted:
    """What the sums and the job `result.json`'s trial list need of a trial's result: a few
    hundred bytes kept per trial while the job runs, not the whole document."""

    trial_name: str
    task_name: str
    layer: str
    attempt: int
    status: TrialStatus
    reward: float | None
    succeeded: bool
    failing: tuple[str, ...]  # scored: the metrics other than `reward` below 1.0
    tokens: tuple[int, int, int, int] | None  # TOKEN_FIELDS; None: no agent was started
    cost_usd: float
    seconds: float | None  # started to finished, once finished
    flags: tuple[str, ...] = ()  # liveness flags (§10.3)

    @classmethod
    def of(cls, trial: TrialResult) -> Counted:
        scored = trial.status is TrialStatus.SCORED
        tokens = trial.tokens
        return cls(
            trial_name=trial.trial_name,
            task_name=trial.task_name,
            layer=trial.layer,
            attempt=trial.attempt,
            status=trial.status,
            reward=trial.reward,
            succeeded=succeeded(trial),
            failing=tuple(
                name
                for name, value in (trial.rewards or {}).items()
                if scored and name != "reward" and value < 1.0
            ),
            tokens=None if tokens is None else token_tuple(tokens),
            cost_usd=trial.cost_usd or 0.0,
            seconds=seconds_between(trial.started_at, trial.finished_at)
            if trial.finished_at
            else None,
            flags=tuple(trial.flags),
        )


@dataclass
class Tally:
    """Counts and sums over a set of trials (§11.1): rates, usage and failing dimensions."""

    trials: int = 0
    statuses: dict[TrialStatus, int] = field(default_factory=lambda: dict.fromkeys(TrialStatus, 0))
    successes: int = 0
    rewards: ExactSum = field(default_factory=ExactSum)  # over scored trials
    billed: int = 0  # trials that started agents (tokens recorded)
    tokens: list[int] = field(default_factory=lambda: [0] * len(TOKEN_FIELDS))
    cost: ExactSum = field(default_factory=ExactSum)
    timed: int = 0  # trials with a finish time
    seconds: ExactSum = field(default_factory=ExactSum)
    failing: dict[str, int] = field(default_factory=dict)  # metric -> scored trials below 1.0
    flags: dict[str, int] = field(default_factory=dict)  # liveness flag -> trials carrying it

    def add(self, trial: Counted, sign: int = 1) -> None:
        """Count `trial` in (`sign` 1) or take it back out (`sign` -1)."""
        self.trials += sign
        self.statuses[trial.status] += sign
        if trial.status is TrialStatus.SCORED:
            self.successes += sign * trial.succeeded
            self.rewards.add(trial.reward or 0.0, sign)
            for name in trial.failing:
                self._count_failing(name, sign)
        if trial.tokens is not None:
            self.billed += sign
            for index, count in enumerate(trial.tokens):
                self.tokens[index] += sign * count
            self.cost.add(trial.cost_usd, sign)
        if trial.seconds is not None:
            self.timed += sign
            self.seconds.add(trial.seconds, sign)
        for flag in trial.flags:
            _count(self.flags, flag, sign)

    def remove(self, trial: Counted) -> None:
        self.add(trial, -1)

    def _count_failing(self, name: str, sign: int) -> None:
        _count(self.failing, name, sign)

    def merge(self, other: Tally) -> None:
        self.trials += other.trials
        for status, count in other.statuses.items():
            self.statuses[status] += count
        self.successes += other.successes
        self.rewards.merge(other.rewards)
        self.billed += other.billed
        self.tokens = [
            mine + theirs for mine, theirs in zip(self.tokens, other.tokens, strict=True)
        ]
        self.cost.merge(other.cost)
        self.timed += other.timed
        self.seconds.merge(other.seconds)
        for name, count in other.failing.items():
            self._count_failing(name, count)
        for flag, count in other.flags.items():
            _count(self.flags, flag, count)

    @classmethod
    def of(cls, tallies: list[Tally]) -> Tally:
        total = cls()
        for tally in tallies:
            total.merge(tally)
        return total

    @property
    def scored(self) -> int:
        return self.statuses[TrialStatus.SCORED]

    def rates(self, planned: int) -> Rates:
        scored = self.scored
        return Rates(
            planned=planned,
            scored=scored,
            errors=self.statuses[TrialStatus.ERROR],
            cancelled=self.statuses[TrialStatus.CANCELLED],
            running=self.statuses[TrialStatus.RUNNING],
            not_started=max(0, planned - self.trials),
            pass_rate=self.rewards.value / scored if scored else None,
            pass_rate_all=self.successes / planned if planned else None,
            flags={flag.value: self.flags[flag] for flag in Flag if self.flags.get(flag)},
        )

    def token_counts(self) -> TokenCounts:
        return TokenCounts(**dict(zip(TOKEN_FIELDS, self.tokens, strict=True)))

    def usage(self) -> UsageSummary:
        cost = self.cost.value
        return UsageSummary(
            tokens=self.token_counts(),
            cost_usd=cost,
            mean_cost_usd=cost / self.billed if self.billed else None,
            mean_trial_seconds=self.seconds.value / self.timed if self.timed else None,
        )

    def failing_dimensions(self) -> dict[str, int]:
        """By metric name (the same order however the trials came and went)."""
        return dict(sorted(self.failing.items()))


def _count(counts: dict[str, int], key: str, sign: int) -> None:
    """Add `sign` to `counts[key]`, dropping the key at zero."""
    count = counts.get(key, 0) + sign
    if count:
        counts[key] = count
    else:
        del counts[key]


def seconds_between(start: str, end: str) -> float:
    started = datetime.fromisoformat(start.replace("Z", "+00:00"))
    finished = datetime.fromisoformat(end.replace("Z", "+00:00"))
    return (finished - started).total_seconds()
