"""A run's `run.json`: the plan one `orchestra benchmark` command made, written before any trial.

A run directory holds the jobs of one plan (orchestrator.md §2.3: one job, or the regression
job then the workflow job) and this record of them, so `orchestra resume RUN_DIR` can finish
the whole plan, including jobs that were never started, and rerunning the command can find
the run again. Each job directory keeps its own layout and documents (§10).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from orchestra.config.task import Layer
from orchestra.documents.enums import EnvKind, StackMode
from orchestra.documents.io import Document, Sha256, Timestamp
from orchestra.documents.job import (
    DEFAULT_SETTLE_MS,
    MAX_SETTLE_MS,
    EndpointRecord,
    PlanRecord,
    ReplayIdentity,
    is_oracle_roster,
)
from orchestra.documents.trial import Attempt, Count, Part


class RunSelection(Part):
    """How the tasks were chosen (§2.2): the dataset path and the filters, as given."""

    path: str  # absolute
    layer: Layer | None
    include: list[str]
    exclude: list[str]
    attempts: Attempt | None  # `-k`; null when the layer defaults applied


class RunJob(Part):
    """One planned job, in plan order: its name, its plan and the identity it must resume with."""

    job_name: str
    plan: PlanRecord
    replay_identity: ReplayIdentity


class RunSettings(Part):
    """What `orchestra resume RUN_DIR` needs to start the jobs the same way (paths absolute).

    The database URL is kept only when it carries no password (secrets are never written).
    """

    manifest: str
    endpoint_config: str
    artifact_root: str
    stack: StackMode
    relay_url: str | None  # external stack only
    database_url: str | None
    relay_port: int
    state_dir: str
    n_concurrent: Attempt
    timeout_multiplier: float
    keep_channels: bool
    keep_containers: bool
    #: the solo settle grace (§7.11); absent in runs started before it was recorded here
    settle_ms: Annotated[int, Field(ge=0, le=MAX_SETTLE_MS)] = DEFAULT_SETTLE_MS
    buzz_bin_dir: str | None
    report: bool


class RunResume(Part):
    at: Timestamp
    owed_trials: Count


class RunRecord(Document):
    """`<jobs-dir>/<run name>/run.json`; each resume appends to `resumes`."""

    schema_version: Literal[1] = 1
    run_name: str
    id: str
    created_at: Timestamp
    orchestrator_version: str
    condition: str
    manifest_sha256: Sha256
    endpoints: dict[str, EndpointRecord]
    environment: EnvKind
    plan_identity: Sha256  # over the jobs' layers and replay identities, not their names
    selection: RunSelection
    jobs: list[RunJob]
    settings: RunSettings
    resumes: list[RunResume] = Field(default_factory=list)

    @property
    def is_oracle(self) -> bool:
        return is_oracle_roster(self.endpoints)

    @property
    def n_planned(self) -> int:
        return sum(job.plan.n_trials for job in self.jobs)
