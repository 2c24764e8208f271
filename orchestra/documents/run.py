"""A run's `run.json`: the plan one `orchestra benchmark` command made, written before any trial.

A run directory holds the jobs of one plan (orchestrator.md §2.3: one job, or the regression
job then the workflow job) and this record of them, so `orchestra resume RUN_DIR` can finish
the whole plan, including jobs that were never started, and rerunning the command can find
the run again. Each job directory keeps its own layout and documents (§10).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from orchestra.documents.enums import EnvKind
from orchestra.documents.io import Document, Sha256, Timestamp, absent
from orchestra.documents.job import EndpointRecord, PlanRecord, ReplayIdentity, is_oracle_roster
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import Count, Part


class RunJob(Part):
    """One planned job, in plan order: its name, its plan and the identity it must resume with."""

    job_name: str
    plan: PlanRecord
    replay_identity: ReplayIdentity


class RunResume(Part):
    at: Timestamp
    owed_trials: Count


class RegradeRecord(Part):
    """A run `orchestra regrade` made: the run it re-scored, when, and the verifier digest
    (`tests/` alone) of each task as it graded them (§2.6 "Regrade")."""

    from_run: str
    at: Timestamp
    verifier_digests: dict[str, Sha256]


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
    jobs: list[RunJob]
    #: what `orchestra resume RUN_DIR` starts the jobs with (paths absolute; a database URL
    #: only when it carries no password: secrets are never written)
    settings: RunConfig
    resumes: list[RunResume] = Field(default_factory=list)
    #: set on a run `orchestra regrade` wrote; absent on every other run
    regrade: Annotated[RegradeRecord | None, Field(exclude_if=absent)] = None

    @model_validator(mode="before")
    @classmethod
    def _nest_selection(cls, data: Any) -> Any:
        """Runs started before `RunConfig` kept the task selection beside the settings and
        the environment only at the top level."""
        if (
            isinstance(data, dict)
            and "selection" in data
            and isinstance(data.get("settings"), dict)
        ):
            data = dict(data)
            legacy = {"selection": data.pop("selection"), "env": data.get("environment")}
            data["settings"] = legacy | data["settings"]
        return data

    @property
    def is_oracle(self) -> bool:
        return is_oracle_roster(self.endpoints)

    @property
    def n_planned(self) -> int:
        return sum(job.plan.n_trials for job in self.jobs)
