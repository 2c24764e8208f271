"""The aggregation of §11 as the job `result.json` embeds it and `summarize --json` prints it.

Task rows carry pass@k with its k; layer and condition rows the mean over the tasks that have
one and how many those are (§11.1).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from orchestra.documents.io import absent, empty
from orchestra.documents.trial import Count, Part, TokenCounts


class Rates(Part):
    """Trial counts that add up: planned = scored + errors + cancelled + running + not_started."""

    planned: Count
    scored: Count
    errors: Count
    cancelled: Count
    running: Count  # no terminal status yet (or the process that ran it died)
    not_started: Count  # planned slots with no trial result
    pass_rate: float | None  # mean reward over scored trials; None when none was scored
    pass_rate_all: float | None  # successes / planned
    #: liveness flag -> trials carrying it (§10.3), flags no trial carries left out
    flags: Annotated[dict[str, Count], Field(default_factory=dict, exclude_if=empty)]


class UsageSummary(Part):
    tokens: TokenCounts
    cost_usd: float
    mean_cost_usd: float | None
    mean_trial_seconds: float | None


class TaskPassAtK(Part):
    k: int
    value: float


class GroupPassAtK(Part):
    value: float
    n_tasks: Count
    #: tasks with fewer scored attempts than k (no pass@k of their own), named
    left_out: list[str] = Field(default_factory=list)


class Interval(Part):
    """A 95 % interval: Wilson over a task's attempts, else clustered over tasks (Wilson on the
    effective n with the t quantile); "bootstrap" in documents written before
    (docs/statistics.md, "Intervals")."""

    low: float
    high: float
    method: Literal["wilson", "bootstrap", "clustered"]


class Uncertainty(Part):
    """Where a mean over tasks' uncertainty comes from (docs/statistics.md, "Intervals")."""

    #: share of the variance from tasks differing (None: one attempt per task, not separable)
    between_share: float | None
    design_effect: float  # attempts per independent observation
    effective_n: float
    attempts: Count
    half_width: float  # of the interval
    twice_attempts: float  # the half-width with twice the attempts per task
    twice_tasks: float  # with twice the tasks
    calibrated: bool  # the design is within the calibration study's grid


class Estimate(Part):
    """A mean over tasks with its 95 % interval over tasks."""

    value: float
    n_tasks: Count
    interval: Interval | None
    uncertainty: Uncertainty | None = None  # the mean pass rate over tasks only


class ConfirmationCount(Part):
    """A task's attempts beyond its job's k (confirmation reruns, `--confirm-against`): counted
    apart and out of every rate, since only regressed tasks get them (a selection bias)."""

    attempts: Count  # confirmation trials, whatever their status
    scored: Count
    passes: Count  # scored with reward 1.0


class MetricCount(Part):
    """One metric over the scored trials: how many held, of how many carried it."""

    passed: Count
    scored: Count
    rate: float


class Outcomes(Part):
    """Per metric pass counts and how the agent phase ended (`none`: it never ended normally),
    added by the report layer (report.json); absent from `summarize --json` and result.json."""

    metrics: Annotated[dict[str, MetricCount] | None, Field(exclude_if=absent)] = None
    stop_reasons: Annotated[dict[str, Count] | None, Field(exclude_if=absent)] = None


class TaskSummary(Rates, UsageSummary, Outcomes):
    incomplete: bool  # fewer scored trials than k
    pass_at_k: TaskPassAtK | None
    failing_dimensions: dict[str, Count]
    # absent (default) in documents written before intervals and pass@k (docs/decisions.md D73)
    successes: Count | None = None  # scored trials with reward 1.0
    #: k -> unbiased pass@k / pass^k for each k up to the attempts run (None: fewer scored)
    pass_at_ks: dict[int, float | None] = Field(default_factory=dict)
    pass_hat_ks: dict[int, float | None] = Field(default_factory=dict)
    flaky: bool = False  # some scored attempts passed and some did not (0 < c < n)
    #: Wilson intervals of the two pass rates, trials as units (added by the report layer)
    pass_rate_interval: Interval | None = None
    pass_rate_all_interval: Interval | None = None
    confirmation: ConfirmationCount | None = None  # None: no attempt beyond k
    #: what a do-nothing agent scores on the task (D114); None: unknown or not computed
    floor: Annotated[float | None, Field(exclude_if=absent)] = None


class GroupSummary(Rates, UsageSummary, Outcomes):
    pass_at_k: GroupPassAtK | None
    n_tasks: Count
    # filled by the report layer (orchestra.report.stats.estimates); tasks are the units.
    pass_rate_interval: Interval | None = None
    pass_rate_all_interval: Interval | None = None
    task_mean: Estimate | None = None  # mean over tasks of each task's pass rate
    pass_at_ks: dict[int, Estimate] = Field(default_factory=dict)
    pass_hat_ks: dict[int, Estimate] = Field(default_factory=dict)
    flaky_tasks: list[str] = Field(default_factory=list)


class LayerSummary(GroupSummary):
    tasks: dict[str, TaskSummary]


class FloorSummary(Part):
    """The do-nothing floor over the condition's tasks (docs/decisions.md D114): what a roster
    whose every seat is on the `null` endpoint scores, from the run's `floor.json`."""

    value: float | None  # mean over the tasks whose floor is known; None: none is
    n_tasks: Count  # tasks whose floor is known
    unknown: list[str] = Field(default_factory=list)  # floor trial did not score: "—"
    passing: list[str] = Field(default_factory=list)  # tasks a do-nothing agent passes (marked)
    #: passes (rated, reward 1.0) on `passing` tasks by trials flagged `no-tool-call`:
    #: indistinguishable from doing nothing
    idle_passes: Count = 0


class JobRef(Part):
    name: str
    path: str
    started: bool  # False: a job of the run's plan that was never started (no directory)
    stopped: str | None = None  # the job result's `stopped`
    stop_message: str | None = None
    spent_usd: float | None = None


class AgentSummary(Part):
    """One agent id of the roster over the condition's trials: its share of what the team
    wrote in the transcripts (messages it authored / messages any agent authored, over the
    trials whose evidence was exported) and what it cost."""

    role: str
    kind: str
    endpoint: str
    trials: Count
    messages: Count
    transcript_share: float | None  # None: no agent message in any exported transcript
    tokens: TokenCounts
    cost_usd: float
    #: model requests and seconds with a turn in flight, summed over the trials that recorded
    #: them, and liveness flag -> trials in which this seat carried it (per-seat attribution)
    requests: Annotated[Count | None, Field(exclude_if=absent)] = None  # None: not recorded
    active_seconds: Annotated[float | None, Field(exclude_if=absent)] = None
    flags: Annotated[dict[str, Count], Field(default_factory=dict, exclude_if=empty)]


class ConditionSummary(Part):
    condition: str
    manifest_sha256: str
    oracle: bool  # the roster runs the built-in oracle, not a model
    jobs: list[JobRef]
    layers: dict[str, LayerSummary]
    totals: GroupSummary
    error_types: dict[str, list[str]]  # §12 type (or status) -> trial names
    #: agent id -> its summary, in roster order; absent in documents written before it existed
    agents: dict[str, AgentSummary] = Field(default_factory=dict)
    #: endpoint name -> the model id sent (docs/decisions.md D87); conditions differing here are
    #: never pooled
    models: dict[str, str] = Field(default_factory=dict)
    #: the do-nothing floor of the condition's tasks; absent when the run computed none
    floor: Annotated[FloorSummary | None, Field(exclude_if=absent)] = None

    @property
    def never_acted(self) -> bool:
        """Every finished trial is flagged `no-tool-call`: over a suite, more likely a serving
        mistake (no tool-call template) than a model that cannot act."""
        finished = self.totals.scored + self.totals.errors
        return finished > 0 and self.totals.flags.get("no-tool-call", 0) >= finished


class Summary(Part):
    """`orchestra summarize --json` (§11.2)."""

    conditions: list[ConditionSummary]
