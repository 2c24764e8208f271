"""Small-sample statistics for comparing pass counts: Wilson intervals and Fisher's exact test.

Pass counts in this benchmark are tiny (k = 1..10 per task), where normal approximations
are wrong; both methods here are exact or well-behaved at n < 10 and need only `math`.
"""

from __future__ import annotations

from math import comb, sqrt

Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (95% by default).

    n = 0 carries no information: the whole [0, 1] range.
    """
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..{n} (got {successes})")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # At 0 or n successes the bound is exactly 0 or 1; rounding would leave 5e-17 behind.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def _hypergeometric(a: int, row1: int, row2: int, col1: int) -> float:
    """P(top-left cell = a) for fixed margins of a 2x2 table."""
    return comb(row1, a) * comb(row2, col1 - a) / comb(row1 + row2, col1)


def fisher_exact_less(
    candidate_passes: int, candidate_n: int, baseline_passes: int, baseline_n: int
) -> float:
    """One-sided Fisher exact p-value that the candidate's pass rate is lower than the baseline's.

    Table rows: candidate, baseline; columns: pass, fail. The p-value is the probability,
    under equal rates and the observed margins, of the candidate passing this few times or fewer.
    """
    for name, passes, n in (
        ("candidate", candidate_passes, candidate_n),
        ("baseline", baseline_passes, baseline_n),
    ):
        if n < 0 or not 0 <= passes <= n:
            raise ValueError(f"{name}: passes must be within 0..n (got {passes}/{n})")
    total_passes = candidate_passes + baseline_passes
    low = max(0, total_passes - baseline_n)
    return min(
        1.0,
        sum(
            _hypergeometric(a, candidate_n, baseline_n, total_passes)
            for a in range(low, candidate_passes + 1)
        ),
    )


def fisher_exact_greater(
    candidate_passes: int, candidate_n: int, baseline_passes: int, baseline_n: int
) -> float:
    """One-sided Fisher exact p-value that the candidate's pass rate is higher."""
    return fisher_exact_less(
        candidate_n - candidate_passes, candidate_n, baseline_n - baseline_passes, baseline_n
    )
