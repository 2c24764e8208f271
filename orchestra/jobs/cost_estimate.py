"""The `--dry-run` cost estimate (docs/decisions.md D59): an earlier job of the same condition hash
in the jobs dir, its mean cost per trial × the trials planned now; and, after the endpoint
check, the wall-time estimate (orchestrator.md §2.4): that job's mean output tokens per trial
at the tokens per second the probe measured, `n_concurrent` trials at a time."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.endpoint_probe import ProbeResult
from orchestra.jobs.layout import load_job_record


@dataclass(frozen=True)
class CostEstimate:
    job_name: str  # the earlier job the mean comes from
    trials: int  # its trials that reported a cost
    mean_usd: float
    planned: int

    @property
    def total_usd(self) -> float:
        return self.mean_usd * self.planned

    def line(self) -> str:
        return (
            f"Cost estimate  ${self.total_usd:.4f} for {self.planned} trial(s): "
            f"${self.mean_usd:.4f} per trial, the mean of {self.trials} trial(s) of job "
            f"{self.job_name}"
        )


def estimate_cost(jobs_dir: Path, condition_hash: str, planned: int) -> CostEstimate | None:
    """From the most recently created job of the condition whose trials reported a cost: the
    jobs of every run in the jobs dir, and jobs from before runs."""
    for name, trials in _earlier_jobs(jobs_dir, condition_hash):
        costs = [t.cost_usd for t in trials if t.cost_usd is not None]
        if costs:
            return CostEstimate(name, len(costs), sum(costs) / len(costs), planned)
    return None


def estimate_wall_time(
    jobs_dir: Path, condition_hash: str, trials: tuple[int, int], probes: list[ProbeResult]
) -> str | None:
    """The dry run's wall-time line (`trials`: planned, at a time): the most recent job of the
    condition whose trials counted tokens, its mean output tokens per trial generated at the
    slowest probed endpoint's tokens per second; None when no probe measured a speed."""
    speeds = [p.tokens_per_second for p in probes if p.tokens_per_second is not None]
    if not speeds:
        return None
    tokens_per_second, (planned, concurrent) = min(speeds), trials
    for name, results in _earlier_jobs(jobs_dir, condition_hash):
        outputs = [t.tokens.output for t in results if t.tokens is not None]
        if outputs:
            per_trial = sum(outputs) / len(outputs) / tokens_per_second
            rounds = math.ceil(planned / concurrent)
            return (
                f"Wall time estimate  {_duration(per_trial * rounds)} for {planned} trial(s), "
                f"{concurrent} at a time: {sum(outputs) / len(outputs):,.0f} output tokens per "
                f"trial (job {name}) at {tokens_per_second:.0f} tokens/s (the endpoint check)"
            )
    return (
        f"Wall time estimate  none (no earlier job of this condition counted tokens); the "
        f"endpoint check measured {tokens_per_second:.0f} tokens/s"
    )


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def _earlier_jobs(jobs_dir: Path, condition_hash: str) -> Iterator[tuple[str, list[TrialResult]]]:
    """The condition's jobs in the jobs dir (every run's, and jobs from before runs), the most
    recently created first: each one's name and trial results."""
    candidates: list[tuple[str, Path]] = []
    configs = [*jobs_dir.glob("*/*/config.json"), *jobs_dir.glob("*/config.json")]
    for config_path in sorted(configs):
        try:
            config = JobConfig.load_if_readable(config_path)
        except DocumentError:
            continue  # another job's malformed documents are not the dry run's business
        if config is not None and config.manifest.sha256 == condition_hash:
            candidates.append((config.created_at, config_path.parent))
    for _, job_dir in sorted(candidates, reverse=True):
        try:
            record = load_job_record(job_dir)
        except DocumentError:
            continue
        yield record.name, record.trials
