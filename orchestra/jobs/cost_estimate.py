"""The `--dry-run` cost estimate (docs/decisions.md D59): an earlier job of the same condition hash
in the jobs dir, its mean cost per trial × the trials planned now."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig
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
        costs = [t.cost_usd for t in record.trials if t.cost_usd is not None]
        if costs:
            return CostEstimate(record.name, len(costs), sum(costs) / len(costs), planned)
    return None
