"""The nightly's calibration study (docs/statistics.md "The nightly decision"): nights simulated
through the very functions the nightly runs (the screen and watch of `TaskEvidence`, `futile`
for stopping confirmation attempts, `decide` for the one family, the suite's
`suite_regression_test`), so the false-alarm and detection rates it prints are those of the
code, not of a model of it. `bench/nightly_calibration.py` runs the full grid; a fast subset
runs in tests/report/test_nightly_study.py.

A replicate is one condition's sequence of nights. Its history is `history_runs` nights of k
first attempts per task drawn at each task's rate; then nights run one after another, each
pooling the latest `history_runs` nights, with the recent nights' confirmation attempts and
failed first attempts carried as the results database carries them (`RECENT_RUNS`).
numpy is imported inside the functions (see orchestra.report.stats).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestra.report.stats.confirm import (
    DEFAULT_RELIABILITY_TARGET,
    NIGHTLY_ALPHA,
    Counts,
    TaskEvidence,
    decide,
    futile,
)
from orchestra.report.stats.stratified import TaskCounts, suite_regression_test
from orchestra.results.history import HISTORY_RUNS, RECENT_RUNS

if TYPE_CHECKING:
    import numpy as np

#: `just nightly`'s confirmation attempts per task and night
NIGHTLY_CONFIRM_ATTEMPTS = 12


@dataclass(frozen=True)
class Design:
    tasks: int
    rate: float  # every task's pass rate while nothing changes
    k: int  # first attempts per task and night
    history_runs: int = HISTORY_RUNS
    confirm_attempts: int = NIGHTLY_CONFIRM_ATTEMPTS
    alpha: float = NIGHTLY_ALPHA
    target: float = DEFAULT_RELIABILITY_TARGET


@dataclass
class _Condition:
    """One replicate: per night (oldest first) each task's first-attempt passes and its
    confirmation attempts (passes, scored; (0, 0) when it had none)."""

    first: list[list[int]] = field(default_factory=list)
    fresh: list[list[Counts]] = field(default_factory=list)


@dataclass(frozen=True)
class Night:
    failed: bool  # exit 3: a regression in the family
    regressions: list[int]  # the tasks the family rejected
    confirmation_attempts: int


def _night(
    condition: _Condition,
    rates: Sequence[float],
    design: Design,
    rng: np.random.Generator,
    *,
    decided: bool = True,
) -> Night:
    """One night; with `decided` false only what later nights carry (no decision)."""
    k, runs = design.k, design.history_runs
    history = condition.first[-runs:]
    recent_first = condition.first[-RECENT_RUNS:]
    recent_fresh = condition.fresh[-RECENT_RUNS:]
    first = [int(passes) for passes in rng.binomial(k, rates)]
    fresh_tonight: list[Counts] = []
    evidence: list[TaskEvidence] = []
    suite: list[TaskCounts] = []
    spent = 0
    for task, rate in enumerate(rates):
        baseline = Counts(sum(night[task] for night in history), k * len(history))
        recent = Counts(0, 0)
        for night in recent_fresh:
            recent = recent + night[task]
        failed_recently = any(night[task] < k for night in recent_first)
        watched = failed_recently
        found = TaskEvidence(
            task=str(task),
            baseline=baseline,
            first=Counts(first[task], k),
            fresh=recent,
            watched=watched,
        )
        tonight = Counts(0, 0)
        if found.wants_confirmation:
            for left in range(design.confirm_attempts, 0, -1):
                if futile(found, left, design.alpha, None):
                    break
                passed = int(rng.random() < rate)
                tonight = tonight + Counts(passed, 1)
                found = TaskEvidence(found.task, baseline, found.first, recent + tonight, watched)
        spent += tonight.scored
        fresh_tonight.append(tonight)
        evidence.append(found)
        suite.append(TaskCounts(baseline.scored, baseline.passes, k, first[task]))
    condition.first.append(first)
    condition.fresh.append(fresh_tonight)
    if not decided:
        return Night(False, [], spent)
    result = suite_regression_test(suite)
    mean_change = sum(
        f / k - b.passes / b.scored
        for f, b in zip(first, (e.baseline for e in evidence), strict=True)
    )
    decision = decide(
        evidence,
        suite_p=result.p_regression if mean_change < 0 else 1.0,
        alpha=design.alpha,
        target=design.target,
    )
    regressions = [int(name) for name in decision.regressions]
    return Night(decision.suite_regression or bool(regressions), regressions, spent)


def _history(design: Design, rng: np.random.Generator) -> _Condition:
    condition = _Condition()
    for _ in range(design.history_runs):
        condition.first.append(
            [int(p) for p in rng.binomial(design.k, [design.rate] * design.tasks)]
        )
        condition.fresh.append([Counts(0, 0)] * design.tasks)
    return condition


@dataclass(frozen=True)
class FalseAlarms:
    design: Design
    nights: int
    alarms: int
    confirmation_attempts: float  # per night, on average

    @property
    def rate(self) -> float:
        return self.alarms / self.nights


def false_alarms(design: Design, replicates: int, seed: int) -> FalseAlarms:
    """Unchanged nights: each replicate runs `RECENT_RUNS` nights to carry the recent
    confirmation state, then the night that counts."""
    import numpy as np

    rng = np.random.default_rng(seed)
    alarms = spent = 0
    rates = [design.rate] * design.tasks
    for _ in range(replicates):
        condition = _history(design, rng)
        for _ in range(RECENT_RUNS):
            _night(condition, rates, design, rng, decided=False)
        night = _night(condition, rates, design, rng)
        alarms += night.failed
        spent += night.confirmation_attempts
    return FalseAlarms(design, replicates, alarms, spent / replicates)


@dataclass(frozen=True)
class Detection:
    design: Design
    before: float
    after: float
    within: int  # nights
    replicates: int
    detected: int
    other_alarms: int  # replicates in which an unchanged task was confirmed first

    @property
    def rate(self) -> float:
        return self.detected / self.replicates


def detection(
    design: Design, before: float, after: float, within: int, replicates: int, seed: int
) -> Detection:
    """Task 0 falls from `before` to `after` (the others stay at `design.rate`): the share of
    replicates in which it is confirmed within `within` nights of the fall."""
    import numpy as np

    rng = np.random.default_rng(seed)
    detected = others = 0
    steady = [before] + [design.rate] * (design.tasks - 1)
    fallen = [after] + [design.rate] * (design.tasks - 1)
    for _ in range(replicates):
        condition = _Condition()
        for _ in range(design.history_runs):
            condition.first.append([int(p) for p in rng.binomial(design.k, steady)])
            condition.fresh.append([Counts(0, 0)] * design.tasks)
        for _ in range(RECENT_RUNS):
            _night(condition, steady, design, rng, decided=False)
        for _ in range(within):
            night = _night(condition, fallen, design, rng)
            if 0 in night.regressions:
                detected += 1
                break
            if night.regressions:
                others += 1
    return Detection(design, before, after, within, replicates, detected, others)
