"""Provider failures are errors, never scores (orchestrator.md §12; docs/decisions.md D56).

A trial in which an agent's turn was given up because of the provider (the event log's
`turn_failed` with `will_retry: false` and a provider error kind) ends `error`, after its
evidence was exported and its verifier ran: the rewards are kept for inspection, not counted.
"""

from __future__ import annotations

from orchestra.agents.acp.records import TurnFailed
from orchestra.agents.llm.failures import POLICIES, FailureClass
from orchestra.config.endpoints import Endpoint
from orchestra.documents.enums import ErrorType, Phase
from orchestra.settings import SettingError
from orchestra.trial.context import JobContext
from orchestra.trial.errors import TrialError, exception_info
from orchestra.trial.launch import provider_settings
from orchestra.trial.state import TrialState

PROVIDER_UNAVAILABLE = ErrorType.PROVIDER_UNAVAILABLE
PROVIDER_AUTH_FAILED = ErrorType.PROVIDER_AUTH_FAILED
#: The error type of a given-up turn by its failure class (`TurnFailed.failure_class`).
_CLASS_ERROR_TYPES = {
    FailureClass.AUTH: ErrorType.PROVIDER_AUTH_FAILED,
    FailureClass.BILLING: ErrorType.PROVIDER_BILLING_FAILED,
    FailureClass.BAD_REQUEST: ErrorType.PROVIDER_REQUEST_REJECTED,
}
#: Error kinds that are the provider's failing whatever the request (agent-harness.md §2.2).
PROVIDER_ERROR_KINDS = frozenset({"llm_network_error", "llm_bad_response"})
AUTH_STATUSES = frozenset({401, 403})
#: HTTP statuses of `llm_http_error` that are the provider's (a 400 or a context-length error
#: is the agent's own doing and stays a score).
PROVIDER_HTTP_STATUSES = AUTH_STATUSES | {408, 429}


def failure_class(record: TurnFailed) -> FailureClass | None:
    """The failure's class as buzz-agent named it; None for older logs or other agents."""
    try:
        return FailureClass(record.failure_class) if record.failure_class else None
    except ValueError:
        return None


def is_provider_failure(record: TurnFailed) -> bool:
    """A given-up turn whose cause is the provider (or the request the harness built), not the
    agent under test."""
    named = failure_class(record)
    if named is not None:
        return not POLICIES[named].scored
    if record.error_kind in PROVIDER_ERROR_KINDS:
        return True
    status = record.http_status
    return (
        record.error_kind == "llm_http_error"
        and status is not None
        and (status in PROVIDER_HTTP_STATUSES or 500 <= status <= 599)
    )


#: Errors recorded before grading stand (they stopped the trial); a verifier or evidence error
#: after a provider failure is its consequence, so the provider error replaces it.
_STANDING_PHASES = frozenset({Phase.SETUP, Phase.AGENT, Phase.TEARDOWN})


def record_provider_failure(state: TrialState, ctx: JobContext) -> None:
    """After grading: a provider failure makes the trial `error`; the rewards stay recorded."""
    error = provider_error(state, ctx)
    if error is None:
        return
    log = state.recorder.log
    previous = state.exception_info
    if previous is not None and previous.phase in _STANDING_PHASES:
        log(f"also {error.exception_type}: {error}")
        return
    if previous is not None:
        log(f"{previous.exception_type} follows from {error.exception_type}")
    state.exception_info = exception_info(error, Phase.AGENT)
    state.grading.reward = None  # not a score; `rewards` stay for inspection (§9.4's rule)
    log(f"error {error.exception_type}: {error}")


def provider_error(state: TrialState, ctx: JobContext) -> TrialError | None:
    """The trial's provider error, naming agent, endpoint, URL, status and the provider's text
    (never the key); one that stops the run (auth, billing) or a rejected request first, else
    the first give-up."""
    failures = [
        (agent_id, record)
        for agent_id, follower in state.setup.followers.items()
        for record in follower.state.given_up
        if is_provider_failure(record)
    ]
    if not failures:
        return None
    stopping = [f for f in failures if error_type_of(f[1]) != PROVIDER_UNAVAILABLE]
    agent_id, record = (stopping or failures)[0]
    kind = error_type_of(record)
    endpoint_name = next(s.entry.endpoint for s in state.slots if s.agent_id == agent_id)
    endpoint = ctx.condition.endpoint_config[endpoint_name]
    cause = f"HTTP {record.http_status}" if record.http_status is not None else record.error_kind
    more = f" ({len(failures)} turns given up)" if len(failures) > 1 else ""
    return TrialError(
        kind,
        f"endpoint {endpoint_name} at {endpoint_url(endpoint_name, endpoint, ctx)}: {cause}: "
        f"agent {agent_id} gave up a turn{more}: {record.error}",
    )


def error_type_of(record: TurnFailed) -> ErrorType:
    named = failure_class(record)
    if named is not None:
        return _CLASS_ERROR_TYPES.get(named, PROVIDER_UNAVAILABLE)
    return PROVIDER_AUTH_FAILED if record.http_status in AUTH_STATUSES else PROVIDER_UNAVAILABLE


def endpoint_url(name: str, endpoint: Endpoint, ctx: JobContext) -> str:
    """The base URL agents dialled for the endpoint (its key is never part of it)."""
    key = ctx.api_keys.get(endpoint.api_key_env or "") or "unset"
    try:
        return provider_settings(name, endpoint, key).base_url
    except SettingError:
        return endpoint.base_url or "(default URL)"
