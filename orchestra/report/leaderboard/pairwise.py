"""The leaderboard's pairwise verdicts, Holm-adjusted over the pairs (docs/statistics.md,
"The leaderboard"): unadjusted, identical conditions had a pair marked better or worse on
12 % of leaderboards of 5 conditions and 25 % of 8."""

from __future__ import annotations

from collections.abc import Sequence

from orchestra.report.compare.comparison import Side, compare_sides
from orchestra.report.leaderboard.board import PairVerdict
from orchestra.report.stats.inference import holm, significant
from orchestra.report.stats.paired import IMPROVEMENT, NO_CHANGE, REGRESSION

MIRRORED = {REGRESSION: IMPROVEMENT, IMPROVEMENT: REGRESSION, NO_CHANGE: NO_CHANGE}


def pairwise(
    sides: dict[str, Side], labels: Sequence[str], alpha: float
) -> dict[str, dict[str, PairVerdict]]:
    """Every pair compared once, as compare would judge the row against the column: two-sided
    p (twice the smaller one-sided p of compare's suite test), Holm-adjusted over the pairs,
    so that among many identical conditions no pair is marked by chance more often than α."""
    pairs = [(row, column) for i, row in enumerate(labels) for column in labels[i + 1 :]]
    suites = [
        compare_sides(sides[column], sides[row], alpha, with_power=False).suite
        for row, column in pairs
    ]
    raw = [min(1.0, 2 * min(s.p_regression, s.p_improvement)) for s in suites]
    matrix: dict[str, dict[str, PairVerdict]] = {label: {} for label in labels}
    for (row, column), suite, p, adjusted in zip(pairs, suites, raw, holm(raw), strict=True):
        difference = suite.mean_difference
        verdict = NO_CHANGE
        if significant(adjusted, alpha) and difference != 0:
            verdict = REGRESSION if difference < 0 else IMPROVEMENT
        for a, b, sign, said in ((row, column, 1, verdict), (column, row, -1, MIRRORED[verdict])):
            matrix[a][b] = PairVerdict(
                verdict=said,
                mean_difference=sign * difference,
                p_value=p,
                adjusted_p_value=adjusted,
                n_tasks=suite.n_tasks,
            )
    return matrix
