"""`report.json` (orchestrator.md §11.3): the §11 summary of one or more jobs, every trial with
what explains its numbers, and the jobs' plans.

`compare` and the nightly read report.json files kept as baselines, so keys added since the
first typed report (2026-12-02) default when absent: a per-trial `agents` and `error_cause`, a
job's `models` and a planned task's `digest` and `verifier_digest` (the summary's own additions default in
`orchestra.documents.summary`). Today's documents dump to exactly the bytes they were read from.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field, JsonValue

from orchestra.config.task import Layer
from orchestra.documents.enums import Accounting, Phase, StopReason, TrialStatus
from orchestra.documents.io import Document, Sha256, Timestamp, absent
from orchestra.documents.summary import AgentSummary, ConditionSummary
from orchestra.documents.trial import (
    Attempt,
    BudgetExceeded,
    ExceptionInfo,
    Part,
    TrialIdentity,
    TrialTokens,
    VerifierInputs,
    VerifierSummary,
)

REPORT_SCHEMA_VERSION: Final = 1

#: A file of the trial's directory, written only when it exists.
_File = Annotated[str | None, Field(exclude_if=absent)]


class PlannedTaskRecord(Part):
    name: str
    layer: Layer
    digest: Sha256 | Literal[""] = ""  # "": written before compare flagged changed task files
    #: `tests/` alone ("": written before compare flagged another verifier)
    verifier_digest: Sha256 | Literal[""] = ""


class PendingSlot(Part):
    """A planned (task, attempt) with no trial directory: the job stopped before it."""

    task_name: str
    layer: Layer
    attempt: Attempt


class ReportJob(Part):
    name: str
    path: str
    condition: str
    manifest_sha256: Sha256
    models: dict[str, str] = Field(default_factory=dict)  # endpoint name -> model id sent
    attempts: Attempt
    oracle: bool
    planned_tasks: list[PlannedTaskRecord]
    pending: list[PendingSlot]


class Durations(Part):
    total_seconds: float | None  # None: the trial has not finished
    phase_seconds: dict[Phase, float | None]  # the phases entered
    agent_active_seconds: float


class AgentFiles(Part):
    system_prompt: _File = None
    stdout: _File = None
    stderr: _File = None
    events: _File = None
    trajectory: _File = None


class TrialFiles(Part):
    """The trial's files that exist, as paths; agent logs per agent id."""

    dir: str
    result_json: _File = None
    config_json: _File = None
    trial_log: _File = None
    oracle_log: _File = None
    evidence_json: _File = None
    transcript_json: _File = None
    evidence_error: _File = None
    reward_json: _File = None
    details_json: _File = None
    verifier_stdout: _File = None
    agents: dict[str, AgentFiles]


class ReportTrial(TrialIdentity):
    """One trial: its result.json's outcome, with the verifier's details and its files."""

    status: TrialStatus
    phase: Phase
    stop_reason: StopReason | None
    reward: float | None
    succeeded: bool  # scored, and the reward passed
    rewards: dict[str, float] | None
    failing_metrics: list[str]
    verifier: VerifierSummary | None
    verifier_inputs: VerifierInputs | None
    details: dict[str, JsonValue] | None  # the verifier's details.json, as it wrote it
    exception_info: ExceptionInfo | None
    error_cause: str | None = None  # whose failure an error is (`ErrorType.cause`)
    budget_exceeded: BudgetExceeded | None
    tokens: TrialTokens | None
    cost_usd: float | None
    accounting: Accounting
    started_at: Timestamp
    finished_at: Timestamp | None
    durations: Durations
    agents: dict[str, AgentSummary] = Field(default_factory=dict)
    files: TrialFiles


class ReportDocument(Document):
    """What `orchestra report` writes to report.json and `compare` reads back."""

    schema_version: Literal[1] = REPORT_SCHEMA_VERSION
    generated_at: Timestamp
    jobs: list[ReportJob]
    conditions: list[ConditionSummary]
    trials: list[ReportTrial]
