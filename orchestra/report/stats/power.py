"""How small a change a plan of tasks × attempts can detect, said out loud.

The model (docs/statistics.md, "Power"): a paired comparison over n tasks of the per-task
mean differences d. With k_b and k_c attempts per task and a per-task pass probability p,
each task mean has binomial noise p(1 − p)/k, so sd(d)² = p(1 − p)(1/k_b + 1/k_c) plus
whatever the tasks really differ by (observed when both sides have run, else assumed 0). The
smallest change detectable with 80 % power by a two-sided test at α is the normal
approximation

    δ = (z(1 − α/2) + z(0.80)) · sd(d) / √n

but never below the exact test's floor m / (n · k), m = log2(2/α) rounded up (below), with
p = 0.5 (the worst case) before anything ran. The exact tests of the comparison also
have a floor: with m tasks the smallest p-value they can give is 2 / 2^m, so below
m = log2(2/α) tasks (6 at α = 0.05) no change at all can be declared, however large.

Pure standard library: the dry run and the run driver call it without loading scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

POWER = 0.80
WORST_CASE_PASS_RATE = 0.5


def _z_sum(alpha: float) -> float:
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(POWER)


def minimum_tasks(alpha: float) -> int:
    """The fewest tasks whose exact paired test can reach p ≤ α (2 / 2^m ≤ α)."""
    return max(1, math.ceil(math.log2(2 / alpha) - 1e-12))


def binomial_sd(pass_rate: float, attempts_baseline: int, attempts_candidate: int) -> float:
    """sd of one task's mean difference from attempt noise alone."""
    variance = pass_rate * (1 - pass_rate) * (1 / attempts_baseline + 1 / attempts_candidate)
    return math.sqrt(variance)


@dataclass(frozen=True)
class Detectable:
    n_tasks: int
    attempts_baseline: int
    attempts_candidate: int
    alpha: float
    sd: float  # the per-task sd of the difference the figure assumes
    change: float | None  # smallest detectable |mean difference| (0..1); None: none at all

    def text(self) -> str:
        attempts = (
            str(self.attempts_baseline)
            if self.attempts_baseline == self.attempts_candidate
            else f"{self.attempts_baseline}/{self.attempts_candidate}"
        )
        plan = f"{self.n_tasks} tasks × {attempts} attempt{'s' if attempts != '1' else ''}"
        if self.change is None:
            return (
                f"{plan}: no change can be detected at α={self.alpha:g} (the exact test needs "
                f"at least {minimum_tasks(self.alpha)} tasks)"
            )
        if self.change >= 1.0:
            return (
                f"{plan}: only a change of 100 points (every task flipping) can be detected "
                f"(α={self.alpha:g})"
            )
        return (
            f"{plan}: only a change of ≥ {math.ceil(self.change * 100)} points can be detected "
            f"(80 % power, α={self.alpha:g})"
        )


def detectable_change(
    n_tasks: int,
    attempts_baseline: int,
    attempts_candidate: int,
    alpha: float,
    pass_rate: float = WORST_CASE_PASS_RATE,
    observed_sd: float | None = None,
) -> Detectable:
    """The smallest mean difference detectable with 80 % power (see the module docstring):
    `observed_sd`, the sd of the observed per-task differences, counts when it is larger than
    attempt noise alone (the tasks really differ)."""
    sd = binomial_sd(pass_rate, attempts_baseline, attempts_candidate)
    if observed_sd is not None:
        sd = max(sd, observed_sd)
    change = None
    if n_tasks >= minimum_tasks(alpha):
        # The exact test's floor: it needs that many tasks all moved the same way, each by at
        # least one attempt's worth; the normal approximation can promise less at k = 1.
        floor = minimum_tasks(alpha) / (n_tasks * max(attempts_baseline, attempts_candidate))
        change = min(1.0, max(floor, _z_sum(alpha) * sd / math.sqrt(n_tasks)))
    return Detectable(n_tasks, attempts_baseline, attempts_candidate, alpha, sd, change)


def attempts_needed(
    n_tasks: int, target_effect: float, alpha: float, pass_rate: float = WORST_CASE_PASS_RATE
) -> int | None:
    """Attempts per task (each side) for 80 % power to detect `target_effect` (0..1) over
    `n_tasks` tasks; None when no number of attempts is enough (too few tasks for the exact
    test). Attempts only shrink the attempt noise: when the tasks themselves differ, adding
    tasks is what helps (docs/statistics.md)."""
    if not 0 < target_effect <= 1:
        raise ValueError(f"the target effect must be within (0, 1] (got {target_effect:g})")
    if n_tasks < minimum_tasks(alpha):
        return None
    variance = 2 * pass_rate * (1 - pass_rate)
    return max(1, math.ceil(_z_sum(alpha) ** 2 * variance / (n_tasks * target_effect**2)))


def dry_run_power_text(jobs: Sequence[tuple[int, int]], alpha: float = 0.05) -> str:
    """The dry run's statement, one line per job of (tasks, attempts): the smallest change a
    comparison of this plan against a run like it can detect (p = 0.5, the worst case)."""
    return "".join(
        "power (compare against a run like it): "
        f"{detectable_change(n_tasks, attempts, attempts, alpha).text()}\n"
        for n_tasks, attempts in jobs
    )
