"""The leaderboard document `orchestra leaderboard --format json` prints and the text,
markdown and HTML outputs read: the ranked entries and the pairwise verdicts."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from orchestra.documents.io import absent
from orchestra.documents.summary import Estimate, FloorSummary, Interval
from orchestra.documents.trial import Part, TokenCounts


class PassHatK(Estimate):
    """The mean of pass^k over tasks at the condition's largest k."""

    k: int


class Entry(Part):
    label: str  # the condition name, plus what tells apart entries that share it
    condition: str
    manifest_sha256: str
    endpoints_sha256: str
    models: dict[str, str]
    timeout_multiplier: float | None
    jobs: list[str]
    n_tasks: int
    scored: int
    task_mean: Estimate | None  # what the ranking orders by
    pass_rate: float | None
    pass_rate_interval: Interval | None
    pass_hat_k: PassHatK | None
    cost_usd: float
    tokens: TokenCounts
    mean_trial_seconds: float | None
    #: what a do-nothing agent scores on the same tasks (D114); absent: not computed
    floor: Annotated[FloorSummary | None, Field(exclude_if=absent)] = None


class PairVerdict(Part):
    """The row's condition against the column's, as `orchestra compare` judges it, the verdict
    Holm-adjusted over the pairs (orchestra.report.leaderboard.pairwise)."""

    verdict: str
    mean_difference: float
    p_value: float  # two-sided: twice the smaller one-sided p of compare's suite test
    adjusted_p_value: float  # Holm over the leaderboard's pairs
    n_tasks: int


class Leaderboard(Part):
    alpha: float
    entries: list[Entry]  # best first
    matrix: dict[str, dict[str, PairVerdict]]  # row label -> column label -> verdict
    shown_apart: list[str]  # condition names whose runs differ and are shown apart
