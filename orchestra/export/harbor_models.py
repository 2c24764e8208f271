"""Harbor 0.25's jobs-directory documents (`harbor.models.job`, `harbor.models.trial`), as far
as this project writes them.

Field names and types are Harbor's (UUIDs, timezone-aware ISO-8601 datetimes); unknown keys are
errors at every level, so a document that parses here has no field Harbor would not know.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

Count = Annotated[int, Field(ge=0)]
HARBOR_AGENT_NAME = "buzz-orchestra"


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> str:
        return self.model_dump_json(indent=2) + "\n"


# --- configs -------------------------------------------------------------------------------------


class TaskConfig(Part):
    path: str


class AgentConfig(Part):
    name: str
    model_name: str | None
    #: `condition` and `manifest_sha256`: what Harbor's kwargs carry for an agent's settings
    kwargs: dict[str, Any]


class EnvironmentConfig(Part):
    type: str


class VerifierConfig(Part):
    override_timeout_sec: float | None


class TrialConfig(Part):
    task: TaskConfig
    trial_name: str
    trials_dir: str
    timeout_multiplier: float
    agent: AgentConfig
    environment: EnvironmentConfig
    verifier: VerifierConfig
    job_id: UUID


class JobConfig(Part):
    job_name: str
    jobs_dir: str
    n_attempts: Count
    n_concurrent_trials: Count
    timeout_multiplier: float
    agents: list[AgentConfig]
    tasks: list[TaskConfig]


# --- trial result --------------------------------------------------------------------------------


class TimingInfo(Part):
    started_at: AwareDatetime | None
    finished_at: AwareDatetime | None


class ExceptionInfo(Part):
    exception_type: str
    exception_message: str
    exception_traceback: str
    occurred_at: AwareDatetime


class ModelInfo(Part):
    name: str
    provider: str


class AgentInfo(Part):
    name: str
    version: str
    model_info: ModelInfo | None


class AgentContext(Part):
    n_input_tokens: Count | None
    n_cache_tokens: Count | None
    n_output_tokens: Count | None
    cost_usd: float | None


class VerifierResult(Part):
    rewards: dict[str, float] | None


class LocalTaskId(Part):
    path: str


class TrialResult(Part):
    id: UUID
    task_name: str
    trial_name: str
    trial_uri: str
    task_id: LocalTaskId
    task_checksum: str
    config: TrialConfig
    agent_info: AgentInfo
    agent_result: AgentContext | None
    verifier_result: VerifierResult | None
    exception_info: ExceptionInfo | None
    started_at: AwareDatetime | None
    finished_at: AwareDatetime | None
    environment_setup: TimingInfo | None
    agent_execution: TimingInfo | None
    verifier: TimingInfo | None


# --- job result ----------------------------------------------------------------------------------


class AgentDatasetStats(Part):
    n_trials: Count
    n_errors: Count
    #: reward key -> reward value -> the trials that scored it
    reward_stats: dict[str, dict[float, list[str]]]
    #: exception type -> the trials that ended in it
    exception_stats: dict[str, list[str]]


class JobStats(Part):
    n_trials: Count
    n_errors: Count
    #: `<agent>__<model>__<dataset>` -> its stats, as Harbor keys them
    evals: dict[str, AgentDatasetStats]


class JobResult(Part):
    id: UUID
    started_at: AwareDatetime
    finished_at: AwareDatetime | None
    n_total_trials: Count
    stats: JobStats
    trial_results: list[TrialResult]
