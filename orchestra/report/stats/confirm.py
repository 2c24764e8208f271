"""The nightly's one decision (docs/statistics.md "The nightly decision"; docs/decisions.md
D107): compare's suite test and the per-task confirmations form one family whose family-wise
error rate is at most α (Holm's step-down over the suite hypothesis and each confirmed task).

A task enters the family when one of its first k attempts tonight failed (the screen), or when
it is under watch (it failed a first attempt in one of the latest runs of the history), and it
has confirmation attempts. Its p-value is a one-sided Boschloo exact test of those
confirmation attempts (tonight's and the recent runs', never the screened first attempts: they
chose the task, so they would bias it) against the baseline's pass counts. Which tasks enter
depends only on first attempts, independent of the confirmation attempts and of the baseline's
rate, so the family's p-values are valid given its members and Holm controls the family-wise
error at α whatever the screen picked.

"Below the reliability target" is a separate finding over the same confirmation attempts (a
one-sided exact binomial test that the task holds at least `target` of the time, Holm over the
same tasks): shown, and a failure only when asked (`--fail-below-target`), never a regression.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from orchestra.report.stats.inference import holm, significant

#: A regression-layer contract holds at least this often (configurable per run).
DEFAULT_RELIABILITY_TARGET = 0.8
#: The nightly's family-wise α: an unchanged night alarms with probability at most this.
NIGHTLY_ALPHA = 0.02
SUITE = "suite"
Kind = Literal["suite", "task"]
#: Boschloo's nuisance parameter (the common pass rate) is maximised over this many rates.
_NUISANCE_GRID = 1000


@dataclass(frozen=True)
class Counts:
    passes: int
    scored: int

    @property
    def rate(self) -> float | None:
        return self.passes / self.scored if self.scored else None

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.passes + other.passes, self.scored + other.scored)

    def text(self) -> str:
        return f"{self.passes} of {self.scored}"


NONE = Counts(0, 0)


@dataclass(frozen=True)
class TaskEvidence:
    """One task's counts: its baseline, tonight's first k attempts, its confirmation attempts
    (tonight's and the recent runs'), and whether the history keeps it under watch."""

    task: str
    baseline: Counts
    first: Counts
    fresh: Counts
    watched: bool = False

    @property
    def screened(self) -> bool:
        """One of tonight's first attempts failed. Only tonight's first attempts decide it,
        never the baseline the confirmation is tested against: a screen that compared with the
        baseline would pick the tasks whose baseline happened to come out high, and their
        tests would alarm too often (measured: 3.8 % of unchanged nights at α = 2 %)."""
        return self.first.passes < self.first.scored

    @property
    def wants_confirmation(self) -> bool:
        return self.baseline.scored > 0 and (self.screened or self.watched)

    @property
    def in_family(self) -> bool:
        return self.wants_confirmation and self.fresh.scored > 0


def regression_p_value(fresh: Counts, baseline: Counts) -> float:
    """One-sided Boschloo exact p that the confirmation attempts pass less often than the
    baseline (1 when either side has nothing scored)."""
    if not fresh.scored or not baseline.scored:
        return 1.0
    table = _boschloo_less(fresh.scored, baseline.scored)
    return float(table[fresh.passes, baseline.passes])


@lru_cache(maxsize=512)
def _boschloo_less(n: int, m: int) -> Any:
    """Every one-sided Boschloo p of `n` fresh attempts against `m` baseline ones, indexed
    [fresh passes, baseline passes]: the statistic is Fisher's one-sided p; the p-value the
    largest probability, over the common pass rate, of a table whose Fisher p is at most the
    observed one (a 1/`_NUISANCE_GRID` grid of rates; one table of all outcomes, so a
    calibration study can call it millions of times)."""
    import numpy as np
    from scipy.stats import binom, hypergeom

    fresh, base = np.arange(n + 1)[:, None], np.arange(m + 1)[None, :]
    fisher = np.asarray(hypergeom.cdf(fresh, n + m, fresh + base, n)).ravel()
    rates = (np.arange(_NUISANCE_GRID) + 0.5) / _NUISANCE_GRID
    joint = np.asarray(binom.pmf(fresh[..., None], n, rates) * binom.pmf(base[..., None], m, rates))
    order = np.argsort(fisher, kind="stable")
    cumulative = np.cumsum(joint.reshape(-1, _NUISANCE_GRID)[order], axis=0)
    ranked = fisher[order]
    # tables tied on the statistic are all "at most as extreme": count every one of them
    last = np.searchsorted(ranked, ranked * (1 + 1e-9) + 1e-15, side="right") - 1
    p_values = np.empty_like(ranked)
    p_values[order] = np.minimum(cumulative[last].max(axis=1), 1.0)
    return p_values.reshape(n + 1, m + 1)


@lru_cache(maxsize=65536)
def target_p_value(fresh: Counts, target: float) -> float:
    """P(at most `fresh.passes` of `fresh.scored` | the task holds with probability `target`)."""
    if not fresh.scored:
        return 1.0
    from scipy.stats import binom

    return float(binom.cdf(fresh.passes, fresh.scored, target))


@dataclass(frozen=True)
class Hypothesis:
    name: str  # SUITE or the task
    kind: Kind
    p_value: float
    adjusted: float  # Holm over its family
    rejected: bool


@dataclass(frozen=True)
class Decision:
    alpha: float
    target: float
    family: list[Hypothesis]  # the suite test and the confirmed tasks
    below_target: list[Hypothesis]  # the separate finding, over the same tasks
    evidence: dict[str, TaskEvidence]  # the family's tasks

    @property
    def regressions(self) -> list[str]:
        """Tasks whose confirmation is a regression (the family rejected them)."""
        return [h.name for h in self.family if h.kind == "task" and h.rejected]

    @property
    def suite_regression(self) -> bool:
        return any(h.kind == "suite" and h.rejected for h in self.family)

    @property
    def missed_target(self) -> list[str]:
        return [h.name for h in self.below_target if h.rejected]


def _family(named: Sequence[tuple[str, Kind, float]], alpha: float) -> list[Hypothesis]:
    adjusted = holm([p for _, _, p in named])
    return [
        Hypothesis(name, kind, p, a, significant(a, alpha))
        for (name, kind, p), a in zip(named, adjusted, strict=True)
    ]


def decide(
    tasks: Sequence[TaskEvidence],
    *,
    suite_p: float | None,
    alpha: float,
    target: float = DEFAULT_RELIABILITY_TARGET,
) -> Decision:
    """`suite_p`: the suite test's p in the regression direction (None: no suite test)."""
    members = [task for task in tasks if task.in_family]
    named: list[tuple[str, Kind, float]] = (
        [(SUITE, "suite", suite_p)] if suite_p is not None else []
    )
    named += [(t.task, "task", regression_p_value(t.fresh, t.baseline)) for t in members]
    below = _family([(t.task, "task", target_p_value(t.fresh, target)) for t in members], alpha)
    return Decision(
        alpha, target, _family(named, alpha), below, {task.task: task for task in members}
    )


def futile(evidence: TaskEvidence, attempts_left: int, alpha: float, target: float | None) -> bool:
    """No outcome of the attempts left brings the task's regression p (and, given a `target`,
    its below-target p: only when that finding fails the run) to α, the loosest threshold any
    family gives it; failures only lower them, so its confirmation can stop."""
    worst = evidence.fresh + Counts(0, attempts_left)
    if significant(regression_p_value(worst, evidence.baseline), alpha):
        return False
    return target is None or not significant(target_p_value(worst, target), alpha)
