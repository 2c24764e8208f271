"""The closed vocabularies of the jobs-directory documents (orchestrator.md §10.3, §12)."""

from __future__ import annotations

from enum import StrEnum


class TrialStatus(StrEnum):
    """`running` while in progress, then one terminal value (§10.3)."""

    RUNNING = "running"
    SCORED = "scored"
    ERROR = "error"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self is not TrialStatus.RUNNING


class Phase(StrEnum):
    """The trial phases in the order they are entered (§7.1)."""

    SETUP = "setup"
    AGENT = "agent"
    TEARDOWN = "teardown"
    EVIDENCE = "evidence"
    VERIFY = "verify"
    FINALIZE = "finalize"


class StopReason(StrEnum):
    """How the agent phase ended (§7.11); null in result.json when it never ended by a rule.

    The one list of stop reasons: the trial documents, the solo rule (which reports the
    orchestrator's last turn by the member of its ACP stop reason's name, when there is one)
    and the reports all read it from here."""

    DONE_MESSAGE = "done_message"
    TURN_END = "turn_end"
    #: the solo rule held, but the orchestrator's last turn failed and was given up
    TURN_FAILED = "turn_failed"
    # A solo turn end whose last turn the model ended so (docs/decisions.md D86): its refusal, a
    # context it filled beyond what trimming could fix, or output the server could not parse even
    # after the corrective notes (agent-harness.md §2.4). Scored like `turn_end`.
    REFUSAL = "refusal"
    CONTEXT_EXHAUSTED = "context_exhausted"
    INVALID_OUTPUT = "invalid_output"
    TIMEOUT = "timeout"
    AGENT_BUDGET = "agent_budget"
    TRIAL_BUDGET = "trial_budget"

    @classmethod
    def of_turn(cls, acp_stop_reason: str | None) -> StopReason:
        """A completed turn's ACP stop reason as the trial's: its own member when this list
        has one (a refusal, say), else `turn_end` (`end_turn`, and reasons this list lacks)."""
        return next((member for member in cls if member.value == acp_stop_reason), cls.TURN_END)


class ErrorType(StrEnum):
    """`exception_info.exception_type`: the error taxonomy of §12."""

    STACK_UNAVAILABLE = "StackUnavailable"
    ENVIRONMENT_START_ERROR = "EnvironmentStartError"
    UNSUPPORTED_NETWORK_MODE = "UnsupportedNetworkMode"
    PROVISIONING_ERROR = "ProvisioningError"
    FIXTURE_SETUP_ERROR = "FixtureSetupError"
    ARTIFACT_HASH_MISMATCH = "ArtifactHashMismatch"
    AGENT_LAUNCH_ERROR = "AgentLaunchError"
    AGENT_READINESS_TIMEOUT = "AgentReadinessTimeout"
    AGENT_PROCESS_EXITED = "AgentProcessExited"
    TASK_POST_ERROR = "TaskPostError"
    SCRIPTED_EVENT_ERROR = "ScriptedEventError"
    EVIDENCE_EXPORT_ERROR = "EvidenceExportError"
    VERIFIER_TIMEOUT = "VerifierTimeout"
    REWARD_FILE_NOT_FOUND = "RewardFileNotFound"
    REWARD_FILE_EMPTY = "RewardFileEmpty"
    REWARD_PARSE_ERROR = "RewardParseError"
    VERIFIER_REPORTED_ERROR = "VerifierReportedError"
    ORCHESTRATOR_LOST = "OrchestratorLost"  # left `running` by an orchestrator that died
    NODE_LOST = "NodeLost"  # the Ray node (or its node host) died with the trial (scale-out §6)
    TRIAL_ARTIFACTS_TOO_LARGE = "TrialArtifactsTooLarge"  # packed trial dir > limit (§5)
    PROVIDER_UNAVAILABLE = "ProviderUnavailable"  # the model provider failed
    PROVIDER_AUTH_FAILED = "ProviderAuthFailed"  # the provider refused the key (401/403)
    PROVIDER_BILLING_FAILED = "ProviderBillingFailed"  # no credit/quota left
    PROVIDER_REQUEST_REJECTED = "ProviderRequestRejected"  # a request the harness built (400)
    CANCELLED = "Cancelled"  # status `cancelled`, not `error`
    INTERNAL_ERROR = "InternalError"

    @property
    def cause(self) -> str:
        """Whose failure this is, for reports: `provider` (the model's API failed: not the
        agent's score), `verifier` (the task's verifier), `internal` (a bug), `cancelled`,
        or `harness` (the stack, environment or agent tree)."""
        if self in _PROVIDER_ERRORS:
            return "provider"
        if self in _VERIFIER_ERRORS:
            return "verifier"
        if self is ErrorType.INTERNAL_ERROR:
            return "internal"
        if self is ErrorType.CANCELLED:
            return "cancelled"
        return "harness"


_PROVIDER_ERRORS = frozenset(
    {
        ErrorType.PROVIDER_UNAVAILABLE,
        ErrorType.PROVIDER_AUTH_FAILED,
        ErrorType.PROVIDER_BILLING_FAILED,
        ErrorType.PROVIDER_REQUEST_REJECTED,
    }
)
#: Provider errors no retry can help: the run stops starting trials at the first one.
RUN_STOPPING_ERRORS = frozenset({ErrorType.PROVIDER_AUTH_FAILED, ErrorType.PROVIDER_BILLING_FAILED})
_VERIFIER_ERRORS = frozenset(
    {
        ErrorType.VERIFIER_TIMEOUT,
        ErrorType.REWARD_FILE_NOT_FOUND,
        ErrorType.REWARD_FILE_EMPTY,
        ErrorType.REWARD_PARSE_ERROR,
        ErrorType.VERIFIER_REPORTED_ERROR,
    }
)


class EnvKind(StrEnum):
    """Where a trial's agents and verifier run (§5.8)."""

    DOCKER = "docker"
    LOCAL = "local"


class SandboxKind(StrEnum):
    """What kept a trial's agents in (§5.8, §10.3)."""

    BWRAP = "bwrap"  # local env: a bubblewrap sandbox per agent tree
    NONE = "none"  # local env without bubblewrap: host processes
    DOCKER = "docker"  # docker env: the trial's container


class ExecutorKind(StrEnum):
    """Where a job's trials run (scale-out.md §1)."""

    LOCAL = "local"  # in the orchestrator's process
    RAY = "ray"  # on a Ray cluster's nodes


class StackMode(StrEnum):
    """Where the relay and database come from (§5.1)."""

    DOCKER = "docker"
    EMBEDDED = "embedded"
    EXTERNAL = "external"


class Accounting(StrEnum):
    """How a trial's tokens were counted (§7.14)."""

    EVENT_LOG = "event_log"
    UNRECONCILED = "unreconciled"
    UNAVAILABLE = "unavailable"


class VerifierNetwork(StrEnum):
    """What network the verifier had (§9.2, §9.3)."""

    NONE = "none"  # docker env: the container is attached to no network
    NOT_ISOLATED = "not-isolated"  # local env: the verifier shares the host's network


class BudgetScope(StrEnum):
    """Whose limit a `budget_exceeded` record names (§7.13)."""

    AGENT = "agent"
    TRIAL = "trial"


class Flag(StrEnum):
    """A liveness flag of a trial or of one agent seat (orchestrator.md §10.3): what the score
    alone does not say about how the agents behaved, in this (display) order."""

    NO_TOOL_CALL = "no-tool-call"  # never called a tool
    TEXT_ONLY = "text-only"  # answered only in text: wrote replies, posted nothing
    ROUND_CAPPED = "round-capped"  # its last turn stopped at max_turn_requests, then silence
    INVALID_OUTPUT = "invalid-output"  # a turn ended because the model's output did not parse
    LOOPING = "looping"  # the same tool call with the same arguments LOOP_CALLS times in a row
    TIMEOUT = "timeout"  # the agent phase ran out of time
    UNPRICED = "unpriced"  # agents ran turns whose usage (so cost) was not reported
