"""A job's `config.json` (orchestrator.md §10.2) and `result.json` (§10.4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from orchestra.config.endpoints import Endpoint, Provider
from orchestra.documents.enums import EnvKind, ExecutorKind, StackMode, TrialStatus
from orchestra.documents.io import Document, Sha256, Timestamp, absent
from orchestra.documents.run_config import RunConfig
from orchestra.documents.summary import LayerSummary
from orchestra.documents.trial import Attempt, Count, Part, TaskRecord, TokenCounts

PlanLayer = Literal["regression", "workflow", "harbor", "mixed"]
#: Why a job started no more trials before its plan was done (docs/decisions.md D57): the run's cost
#: cap was reached, or the circuit breaker saw provider errors in a row.
JobStopReason = Literal["cost_cap", "circuit_breaker"]


# --- config.json -------------------------------------------------------------------------------


class ReplayIdentity(Part):
    """The §2.5 identity hash, and one hash per component so a mismatch can be named without
    writing endpoint env values into the job's config."""

    sha256: Sha256
    fields: dict[str, Sha256]


class PlanRecord(Part):
    layer: PlanLayer
    attempts: Attempt
    tasks: list[TaskRecord]

    @property
    def n_trials(self) -> int:
        return self.attempts * len(self.tasks)

    def slots(self) -> list[tuple[int, str]]:
        """(attempt, task name) in start order: attempt-major (§2.3 item 7)."""
        return [(a, task.name) for a in range(1, self.attempts + 1) for task in self.tasks]


class ManifestRecord(Part):
    path: str
    sha256: Sha256
    condition: str
    normalized: dict[str, Any]  # the normalised manifest of §3.5, as config hashes it


class EndpointRecord(Part):
    """Names only: env values and key values are never written (§10.2)."""

    provider: Provider
    api_key_env: str | None
    base_url: str | None
    env_keys: list[str]
    model: str | None = None  # the model id sent, when the endpoint names one


def endpoint_records(endpoints: Mapping[str, Endpoint]) -> dict[str, EndpointRecord]:
    """The `endpoints` object of a job config or a run record, from the condition's endpoints."""
    return {name: EndpointRecord.model_validate(ep.summary()) for name, ep in endpoints.items()}


def is_oracle_roster(endpoints: dict[str, EndpointRecord]) -> bool:
    """The roster runs the built-in oracle, not a model."""
    return any(endpoint.provider == "oracle" for endpoint in endpoints.values())


class StackRecord(Part):
    mode: StackMode
    relay_ws_url: str  # what the orchestrator dials
    relay_http_url: str
    agent_relay_url: str  # what agents get (§5.1)
    database: bool


class ResumeRecord(Part):
    at: Timestamp
    owed_trials: Count
    #: where this resume ran the trials (scale-out.md §1); absent in older documents
    executor: Annotated[ExecutorKind | None, Field(default=None, exclude_if=absent)]


class JobConfig(Document):
    """Written once at job start; each resume appends to `resumes` (§2.5)."""

    schema_version: Literal[1] = 1
    job_name: str
    id: str
    created_at: Timestamp
    orchestrator_version: str
    replay_identity: ReplayIdentity
    plan: PlanRecord
    manifest: ManifestRecord
    endpoints: dict[str, EndpointRecord]
    stack: StackRecord
    environment: EnvKind
    #: the run's options (beyond §10.2's list: `resume` reloads the condition from them)
    options: RunConfig
    #: where the job's trials ran when it started (scale-out.md §7); `local` before it existed
    executor: ExecutorKind = ExecutorKind.LOCAL
    resumes: list[ResumeRecord] = Field(default_factory=list)

    @property
    def is_oracle(self) -> bool:
        return is_oracle_roster(self.endpoints)


# --- result.json -------------------------------------------------------------------------------


class JobStats(Part):
    n_scored: Count
    n_errors: Count
    n_cancelled: Count
    n_running: Count
    n_pending: Count
    tokens: TokenCounts
    cost_usd: float


class JobTrialEntry(Part):
    trial_name: str
    task_name: str
    attempt: Attempt
    status: TrialStatus
    reward: float | None


class JobResult(Document):
    """Job progress and aggregates, rewritten after every trial state change (§10.4)."""

    schema_version: Literal[1] = 1
    id: str
    job_name: str
    started_at: Timestamp
    updated_at: Timestamp
    finished_at: Timestamp | None  # null until every trial is terminal
    condition: str
    manifest_sha256: Sha256
    n_planned: Count
    stats: JobStats
    aggregates: dict[str, LayerSummary]
    trials: list[JobTrialEntry]
    stopped: JobStopReason | None = None  # null: the job was not stopped early
    stopped_at: Timestamp | None = None
    stop_message: str | None = None
    spent_usd: float | None = None  # with `cost_cap`: the run's cost (finished + in flight)
