"""The documents `orchestra export harbor` writes, in Harbor's jobs-directory format
(`harbor.models.job`, `harbor.models.trial`, Harbor 0.26): only the fields we fill.

These models are not Harbor's and decide nothing about what Harbor accepts: they type what we
write. What decides is Harbor itself: the tests load every exported file with the real `harbor`
package (its `TrialResult`, `JobResult`, `TrialConfig`, `JobConfig` and its viewer's scanner and
API) and fail on any field Harbor rejects or does not know.
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict

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
    """Harbor's custom-environment form: `import_path` names the class that ran the trial (ours,
    `module:Class`), `type` stays unset so no Harbor environment is claimed; `kwargs` records
    our environment kind."""

    import_path: str
    kwargs: dict[str, str]


class VerifierConfig(Part):
    override_timeout_sec: float | None


class TrialConfig(Part):
    schema_version: Literal[1] = 1
    task: TaskConfig
    trial_name: str
    trials_dir: str
    timeout_multiplier: float
    agent: AgentConfig
    environment: EnvironmentConfig
    verifier: VerifierConfig
    job_id: UUID


class JobConfig(Part):
    schema_version: Literal[1] = 1
    job_name: str
    jobs_dir: str
    n_attempts: int
    n_concurrent_trials: int
    timeout_multiplier: float
    environment: EnvironmentConfig
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
    n_input_tokens: int | None
    n_cache_tokens: int | None
    n_output_tokens: int | None
    cost_usd: float | None


class VerifierResult(Part):
    rewards: dict[str, float] | None


class LocalTaskId(Part):
    path: str


class TrialResult(Part):
    schema_version: Literal[1] = 1
    id: UUID
    task_name: str
    trial_name: str
    trial_uri: str
    task_id: LocalTaskId
    #: the dataset, which Harbor's stats key by (`<agent>__<model>__<source>`)
    source: str
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
    #: trials with rewards and no error (Harbor's `reward_valid`)
    n_trials: int
    n_errors: int
    #: Harbor's default metric, the mean over the trials with rewards: `[{"mean": …}]`
    metrics: list[dict[str, float]]
    #: reward key -> reward value -> the trials that scored it
    reward_stats: dict[str, dict[float, list[str]]]
    #: exception type -> the trials that ended in it
    exception_stats: dict[str, list[str]]


class JobStats(Part):
    n_completed_trials: int
    n_errored_trials: int
    n_running_trials: int
    n_pending_trials: int
    n_cancelled_trials: int
    n_retries: int
    #: `<agent>__<model>__<dataset>` -> its stats, as Harbor keys them
    evals: dict[str, AgentDatasetStats]
    n_input_tokens: int | None
    n_cache_tokens: int | None
    n_output_tokens: int | None
    cost_usd: float | None


class JobResult(Part):
    schema_version: Literal[1] = 1
    id: UUID
    started_at: AwareDatetime
    updated_at: AwareDatetime
    finished_at: AwareDatetime | None
    n_total_trials: int
    stats: JobStats
    trial_results: list[TrialResult]
