"""A trial's `config.json` (orchestrator.md §10.2) and `result.json` (§10.3)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestra.config.manifest import AgentKind
from orchestra.config.task import Layer
from orchestra.documents.enums import (
    Accounting,
    BudgetScope,
    EnvKind,
    ErrorType,
    Flag,
    Phase,
    SandboxKind,
    StopReason,
    TrialStatus,
    VerifierNetwork,
)
from orchestra.documents.io import Document, Sha256, Timestamp, absent, empty

Attempt = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
#: where a verifier input came from (§9)
InputSource = Literal["evidence", "tests", "fixture"]


class Part(BaseModel):
    """A nested object of a document: as strict about its keys as the document."""

    model_config = ConfigDict(extra="forbid")


class TaskRecord(Part):
    """`{name, short_name, dir, layer, digest, harbor_checksum}`, as `Task.record()` builds
    it. `harbor_checksum` is Harbor's `Task.checksum` of the directory when the job started
    (the export's `task_checksum`); absent in documents written before it existed."""

    name: str
    short_name: str
    dir: str
    layer: Layer
    digest: Sha256
    #: `digest` without `solution/` (the history pools runs by it); absent in older documents
    contract_digest: Annotated[Sha256 | None, Field(default=None, exclude_if=absent)]
    #: the digest of `tests/` alone (what grades the task); absent in older documents
    verifier_digest: Annotated[Sha256 | None, Field(default=None, exclude_if=absent)]
    harbor_checksum: Sha256 | None = None


class TrialIdentity(Part):
    """The identifying keys a trial's `result.json` starts with."""

    trial_id: str
    trial_name: str
    job_name: str
    task_name: str
    short_name: str
    layer: Layer
    attempt: Attempt
    condition: str
    manifest_sha256: Sha256


# --- config.json -------------------------------------------------------------------------------


class Timeouts(Part):
    agent_seconds: float
    verifier_seconds: float


class RosterAgent(Part):
    agent_id: str
    class_id: str
    kind: AgentKind
    role: str
    endpoint: str
    model_revision: str


class TrialConfig(Document):
    """The trial plan, written at step 1 (§10.2)."""

    schema_version: Literal[1] = 1
    trial_id: str
    trial_name: str
    job_name: str
    task: TaskRecord
    attempt: Attempt
    condition: str
    manifest_sha256: Sha256
    environment: EnvKind
    timeouts: Timeouts
    roster: list[RosterAgent]


# --- result.json -------------------------------------------------------------------------------


class PhaseTiming(Part):
    started_at: Timestamp
    finished_at: Timestamp | None = None
    seconds: float | None = None


# A phase not entered yet has no key at all (not null): the trial writes each phase's timing
# when it enters the phase.
_PhaseEntry = Annotated[PhaseTiming | None, Field(exclude_if=absent)]


class Timings(Part):
    setup: _PhaseEntry = None
    agent: _PhaseEntry = None
    teardown: _PhaseEntry = None
    evidence: _PhaseEntry = None
    verify: _PhaseEntry = None
    finalize: _PhaseEntry = None
    agent_active_seconds: float = 0.0

    def phase(self, phase: Phase) -> PhaseTiming | None:
        timing: PhaseTiming | None = getattr(self, phase.value)
        return timing


class TokenCounts(Part):
    input: Count
    cached_input: Count
    output: Count
    # Prompt tokens written to the provider's cache (part of `input`); absent in older results.
    cache_write_input: Count = 0


class AgentTokens(TokenCounts):
    turns: Count
    cost_usd: float


class TrialTokens(TokenCounts):
    per_agent: dict[str, AgentTokens]


class VerifierSummary(Part):
    exit_code: int | None
    timed_out: bool
    network: VerifierNetwork
    details_error: str | None


class VerifierInputFile(Part):
    path: str  # absolute, as the verifier saw it
    source: InputSource
    sha256: Sha256
    size: Count  # bytes


class VerifierInputs(Part):
    """What the verifier was given (§9), each file with its SHA-256; `evidence_sha256` is the
    evidence file it read (null only when an export the task does not require failed)."""

    evidence_sha256: Sha256 | None
    files: list[VerifierInputFile]


class BudgetExceeded(Part):
    """The first exceeded limit (§7.13)."""

    scope: BudgetScope
    agent_id: str | None
    limit: Literal["max_input_tokens", "max_output_tokens", "max_cost_usd"]
    max: int | float
    value: int | float


class BuzzUser(Part):
    name: str
    pubkey: str


class BuzzAgent(Part):
    agent_id: str
    role: str
    kind: AgentKind
    endpoint: str
    pubkey: str
    #: messages this agent authored in the exported transcript (the evidence's `messages`);
    #: absent when no evidence was exported, and in documents written before the field existed
    messages: Annotated[Count | None, Field(exclude_if=absent)] = None
    #: model requests the seat made, the seconds it had a turn in flight and its liveness
    #: flags (§10.3, per-seat attribution); absent in documents written before they existed
    requests: Annotated[Count | None, Field(exclude_if=absent)] = None
    active_seconds: Annotated[float | None, Field(exclude_if=absent)] = None
    flags: Annotated[list[Flag], Field(default_factory=list, exclude_if=empty)]


class ScriptedEvent(Part):
    label: str
    event_id: str
    actor: str
    reply_to_event_id: str | None


class BuzzRecord(Part):
    """Where the trial happened in Buzz; filled in as setup and the agent phase progress."""

    channel_id: str | None = None
    channel_name: str | None = None
    task_event_id: str | None = None
    completion_message_id: str | None = None
    scripted_events: list[ScriptedEvent] = Field(default_factory=list)
    evidence_exported: bool = False
    user: BuzzUser | None = None
    agents: list[BuzzAgent] = Field(default_factory=list)


class SecretScan(Part):
    """What redaction replaced (§7.15)."""

    redactions: Count = 0
    files: list[str] = Field(default_factory=list)


class ExceptionInfo(Part):
    exception_type: ErrorType
    exception_message: str
    exception_traceback: str
    occurred_at: Timestamp
    phase: Phase


class RetriedAttempt(Part):
    """An earlier attempt at the same slot that ended in a harness error and was rerun in the
    same job; its directory is `.superseded/<trial_name>` (docs/decisions.md D57)."""

    trial_name: str
    exception_type: ErrorType


class NodeRecord(Part):
    """The Ray node a trial ran on (scale-out.md §5 step 3)."""

    node_id: str
    hostname: str

    @property
    def label(self) -> str:
        """How messages name the node: its host and the start of its id (one machine may
        run several nodes)."""
        return f"{self.hostname} ({self.node_id[:8]})"


class TrialResult(TrialIdentity, Document):
    """The trial's status and outcome, rewritten at every phase change (§10.3).

    The defaults are the document as a trial starts: `TrialResult(**identity, started_at=…)`.
    """

    schema_version: Literal[1] = 1
    status: TrialStatus = TrialStatus.RUNNING
    phase: Phase = Phase.SETUP
    stop_reason: StopReason | None = None
    reward: float | None = None
    rewards: dict[str, float] | None = None
    verifier: VerifierSummary | None = None
    verifier_inputs: VerifierInputs | None = None
    started_at: Timestamp
    finished_at: Timestamp | None = None
    timings: Timings = Field(default_factory=Timings)
    tokens: TrialTokens | None = None
    cost_usd: float | None = None
    accounting: Accounting = Accounting.UNAVAILABLE
    cached_estimated: bool = False
    budget_exceeded: BudgetExceeded | None = None
    #: liveness flags (§10.3) in `Flag` order; empty until finalize and in older documents
    flags: list[Flag] = Field(default_factory=list)
    #: wake-eligible events the stop gave up waiting for (§7.11); absent in older documents
    unaccounted_events: list[str] = Field(default_factory=list)
    buzz: BuzzRecord = Field(default_factory=BuzzRecord)
    #: agent id -> its ATIF trajectory, relative to the trial directory (§7.16)
    trajectories: dict[str, str] = Field(default_factory=dict)
    secret_scan: SecretScan = Field(default_factory=SecretScan)
    exception_info: ExceptionInfo | None = None
    #: absent only in documents written before the field existed
    sandbox: Annotated[SandboxKind | None, Field(exclude_if=absent)] = None
    retried_from: list[RetriedAttempt] = Field(default_factory=list)
    #: `--executor ray` only: the node that ran the trial (absent under the local executor)
    node: Annotated[NodeRecord | None, Field(exclude_if=absent)] = None

    @classmethod
    def starting(cls, identity: TrialIdentity, started_at: str) -> TrialResult:
        """The first `result.json` of a trial: running, in setup, nothing measured yet."""
        return cls(**dict(identity), started_at=started_at)

    @property
    def slot(self) -> tuple[str, int]:
        """(task name, attempt): the planned slot this trial fills (§2.5)."""
        return (self.task_name, self.attempt)

    @property
    def error_type(self) -> str | None:
        """The §12 type of an error or cancellation (the status when none was recorded)."""
        if self.status in (TrialStatus.ERROR, TrialStatus.CANCELLED):
            info = self.exception_info
            return str(info.exception_type) if info is not None else str(self.status)
        return None
