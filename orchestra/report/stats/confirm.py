"""A task's confirmation verdict as its attempts arrive (issue 29, item 5's arithmetic).

Against a baseline of one attempt a two-sample test barely moves (1/1 against 0/n gives
p = 1/(n+1)), so the candidate's attempts are also tested against a stated reliability target:
a one-sided exact binomial test that the task holds at least `target` of the time (0 of 5
attempts against 80 %: p = 0.2^5 ≈ 0.0003). The baseline's one-sided Fisher test decides when
the target does not. A run driver calls `confirm_task` after each attempt: `final` says no
further attempt up to `max_attempts` can change the verdict, so it can stop scheduling them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from orchestra.jobs.tally import metric_passed
from orchestra.report.stats.inference import fisher_one_sided, significant

#: A regression-layer contract holds at least this often (configurable per layer).
DEFAULT_RELIABILITY_TARGET = 0.8
Verdict = Literal["below contract", "regression", "no regression", "pending"]
BELOW_CONTRACT: Verdict = "below contract"
REGRESSION: Verdict = "regression"
NOISE: Verdict = "no regression"
PENDING: Verdict = "pending"
DecidedBy = Literal["reliability target", "baseline"]


@dataclass(frozen=True)
class TaskVerdict:
    verdict: Verdict
    final: bool  # no outcome of the attempts left up to max_attempts can change it
    decided_by: DecidedBy | None  # the test that decided a regression or a contract miss
    p_target: float  # one-sided binomial: the candidate holds less often than the target
    p_baseline: float | None  # one-sided Fisher: less often than the baseline (None: none)


def target_p_value(passes: int, attempts: int, target: float) -> float:
    """P(at most `passes` of `attempts` | the task holds with probability `target`)."""
    if attempts == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(passes, attempts, target, alternative="less").pvalue)


def _decide(
    passes: int, attempts: int, baseline: tuple[int, int], target: float, alpha: float
) -> tuple[Verdict, DecidedBy | None, float, float | None]:
    p_target = target_p_value(passes, attempts, target)
    p_baseline = None
    if baseline[1] and attempts:
        p_baseline = fisher_one_sided(passes, attempts, baseline[0], baseline[1], "less")
    if significant(p_target, alpha):
        return BELOW_CONTRACT, "reliability target", p_target, p_baseline
    if p_baseline is not None and significant(p_baseline, alpha):
        return REGRESSION, "baseline", p_target, p_baseline
    return NOISE, None, p_target, p_baseline


def confirm_task(
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    *,
    max_attempts: int,
    target: float = DEFAULT_RELIABILITY_TARGET,
    alpha: float = 0.05,
) -> TaskVerdict:
    """The verdict of one task from the rewards of its scored attempts on each side."""
    if not 0 < target < 1:
        raise ValueError(f"the reliability target must be within (0, 1) (got {target:g})")
    b = (sum(metric_passed(r) for r in baseline), len(baseline))
    passes, attempts = sum(metric_passed(r) for r in candidate), len(candidate)
    left = max(0, max_attempts - attempts)
    endings = {
        _decide(passes + more, attempts + left, b, target, alpha)[:2] for more in range(left + 1)
    }
    verdict, decided_by, p_target, p_baseline = _decide(passes, attempts, b, target, alpha)
    if len(endings) == 1:
        verdict, decided_by = endings.pop()
        return TaskVerdict(verdict, True, decided_by, p_target, p_baseline)
    return TaskVerdict(PENDING, False, None, p_target, p_baseline)
