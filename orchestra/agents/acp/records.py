"""The JSON-lines event log's records (agent-harness.md §1.11), defined once for both sides.

`buzz-acp` builds each line from one of these models (`EventLog.emit`), and the orchestrator
reads lines back through the same union (`read_record`, orchestrator.md §7.10). Fields that do
not apply are omitted from a line, never written as null (except those a record names in
`NULLABLE`), so every field but `event` is optional here: a reader takes the lines of any
writer that keeps the contract, and ignores record names and fields it does not know.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

# Durations and delays are written as the writer computed them: an int stays an int.
Number = int | float


class Record(BaseModel):
    """The common fields of every line; the writer fills them in (`EventLog.emit`)."""

    # forbid: a misspelt field is an error where a record is built; readers pass extra="ignore"
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Fields written as null rather than omitted when they are None.
    NULLABLE: ClassVar[frozenset[str]] = frozenset()

    ts: str | None = None  # RFC 3339 UTC with milliseconds
    seq: int | None = None  # 1, 2, … per process
    event: str
    agent_pubkey: str | None = None

    def payload(self) -> dict[str, Any]:
        """The record's own fields in line order, None omitted unless NULLABLE."""
        return {
            key: value
            for key, value in self.model_dump().items()
            if key not in COMMON_FIELDS and (value is not None or key in self.NULLABLE)
        }


COMMON_FIELDS = frozenset(Record.model_fields)


class UsageCounters(BaseModel):
    """Token counters; cumulative for the session where a record says so."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None  # None: the agent did not report cached tokens
    # Prompt tokens written to the provider's cache (Anthropic); part of `input_tokens`.
    cache_write_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    llm_calls: int | None = None


class TurnUsage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: UsageCounters | None = None
    session: UsageCounters | None = None


# --- process and relay ---------------------------------------------------------------------


class Startup(Record):
    NULLABLE: ClassVar[frozenset[str]] = frozenset({"channels"})

    event: Literal["startup"] = "startup"
    version: str | None = None
    pid: int | None = None
    relay_url: str | None = None
    channels: list[str] | None = None  # null: all member channels
    subscribe: str | None = None
    respond_to: str | None = None
    pool_size: int | None = None
    agent_command: str | None = None
    mcp_command: str | None = None
    base_prompt: str | None = None  # builtin | file | none
    base_prompt_sha256: str | None = None
    system_prompt_sha256: str | None = None
    memory: bool | None = None


class AgentSpawned(Record):
    event: Literal["agent_spawned"] = "agent_spawned"
    slot: int | None = None
    pid: int | None = None


class AgentInitialized(Record):
    event: Literal["agent_initialized"] = "agent_initialized"
    slot: int | None = None
    protocol_version: int | None = None
    agent_name: str | None = None
    agent_version: str | None = None
    system_prompt_delivery: str | None = None  # meta | inline


class AgentExited(Record):
    event: Literal["agent_exited"] = "agent_exited"
    slot: int | None = None
    pid: int | None = None
    exit_code: int | None = None
    signal: int | None = None  # instead of exit_code when a signal ended it
    during_turn: bool | None = None


class RelayConnected(Record):
    event: Literal["relay_connected"] = "relay_connected"
    url: str | None = None


class RelayAuthenticated(Record):
    event: Literal["relay_authenticated"] = "relay_authenticated"


class RelayDisconnected(Record):
    event: Literal["relay_disconnected"] = "relay_disconnected"
    reason: str | None = None
    reconnect_in_s: Number | None = None


class Shutdown(Record):
    event: Literal["shutdown"] = "shutdown"
    reason: str | None = None
    exit_code: int | None = None


# --- channels and events -------------------------------------------------------------------


class Subscribed(Record):
    event: Literal["subscribed"] = "subscribed"
    channel_id: str | None = None
    channel_name: str | None = None


class SubscriptionRefused(Record):
    event: Literal["subscription_refused"] = "subscription_refused"
    channel_id: str | None = None
    message: str | None = None


class Unsubscribed(Record):
    event: Literal["unsubscribed"] = "unsubscribed"
    channel_id: str | None = None
    reason: str | None = None


class Ready(Record):
    event: Literal["ready"] = "ready"
    channels: list[str] | None = None


class EventQueued(Record):
    event: Literal["event_queued"] = "event_queued"
    channel_id: str | None = None
    event_id: str | None = None
    author: str | None = None
    created_at: int | None = None
    queue_depth: int | None = None


class EventIgnored(Record):
    event: Literal["event_ignored"] = "event_ignored"
    channel_id: str | None = None
    event_id: str | None = None
    author: str | None = None
    reason: str | None = None  # the §1.4 reason, or unsubscribed_channel


class EventDropped(Record):
    event: Literal["event_dropped"] = "event_dropped"
    channel_id: str | None = None
    event_id: str | None = None
    reason: str | None = None  # queue_full


class FailureNotice(Record):
    event: Literal["failure_notice"] = "failure_notice"
    channel_id: str | None = None
    event_id: str | None = None
    reply_to: str | None = None
    reason: str | None = None


class SessionRotated(Record):
    event: Literal["session_rotated"] = "session_rotated"
    channel_id: str | None = None
    slot: int | None = None
    old_session_id: str | None = None
    reason: str | None = None


# --- turns ---------------------------------------------------------------------------------


class TurnStarted(Record):
    event: Literal["turn_started"] = "turn_started"
    turn_id: str | None = None
    channel_id: str | None = None
    slot: int | None = None
    session_id: str | None = None
    session_new: bool | None = None
    event_ids: list[str] | None = None
    attempt: int | None = None  # 1-based
    prompt_chars: int | None = None
    prompt_sha256: str | None = None


class TurnDelivered(Record):
    event: Literal["turn_delivered"] = "turn_delivered"
    turn_id: str | None = None
    channel_id: str | None = None
    event_ids: list[str] | None = None


class ToolCall(Record):
    event: Literal["tool_call"] = "tool_call"
    turn_id: str | None = None
    channel_id: str | None = None
    tool_call_id: str | None = None
    title: str | None = None
    status: str | None = None  # pending | in_progress | completed | failed


class AgentMessage(Record):
    event: Literal["agent_message"] = "agent_message"
    turn_id: str | None = None
    channel_id: str | None = None
    text: str | None = None  # at most 8 KiB
    truncated: bool | None = None


class Usage(Record):
    """Cumulative counters for the session."""

    event: Literal["usage"] = "usage"
    turn_id: str | None = None
    channel_id: str | None = None
    session_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    llm_calls: int | None = None

    @property
    def counters(self) -> UsageCounters:
        return UsageCounters(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cache_write_input_tokens=self.cache_write_input_tokens,
            reasoning_tokens=self.reasoning_tokens,
            llm_calls=self.llm_calls,
        )


class TurnCompleted(Record):
    event: Literal["turn_completed"] = "turn_completed"
    turn_id: str | None = None
    channel_id: str | None = None
    session_id: str | None = None
    # end_turn | max_tokens | max_turn_requests | refusal | context_exhausted | invalid_output
    # | cancelled
    stop_reason: str | None = None
    cancel_reason: str | None = None  # for cancelled
    duration_ms: int | None = None
    event_ids: list[str] | None = None
    usage: TurnUsage | None = None  # final for the turn


class TurnFailed(Record):
    event: Literal["turn_failed"] = "turn_failed"
    turn_id: str | None = None
    channel_id: str | None = None
    session_id: str | None = None
    error: str | None = None
    retryable: bool | None = None
    #: `data.kind` of the prompt's JSON-RPC error (`llm_http_error`, `llm_network_error`,
    #: `llm_bad_response`, `mcp_error`, `internal`); omitted for other failures
    error_kind: str | None = None
    http_status: int | None = None  # `data.status`: the provider's HTTP status, when it had one
    #: `data.class`: what the failure means (`auth`, `billing`, `rate_limit`, `overload`,
    #: `server_error`, `bad_response`, `bad_request`, `context_overflow`, `content_refusal`)
    failure_class: str | None = None
    attempt: int | None = None
    will_retry: bool | None = None
    retry_in_s: Number | None = None  # when retrying
    duration_ms: int | None = None
    event_ids: list[str] | None = None


class LlmRetry(Record):
    """The agent retries a failed provider call (before its wait); the turn goes on."""

    event: Literal["llm_retry"] = "llm_retry"
    turn_id: str | None = None
    channel_id: str | None = None
    session_id: str | None = None
    http_status: int | None = None  # the provider's HTTP status, when it had one
    failure_class: str | None = None  # as in `turn_failed`
    retries_used: int | None = None  # of the agent's retry budget, this retry included
    retry_budget: int | None = None
    retry_in_s: Number | None = None

    def describe(self) -> str:
        """`provider HTTP 500, 2/4` (the retry budget spent), for the live progress."""
        failure = f"HTTP {self.http_status}" if self.http_status is not None else self.failure_class
        return f"provider {failure or 'error'}, {self.retries_used}/{self.retry_budget}"


AnyRecord = Annotated[
    Startup
    | AgentSpawned
    | AgentInitialized
    | AgentExited
    | RelayConnected
    | RelayAuthenticated
    | RelayDisconnected
    | Shutdown
    | Subscribed
    | SubscriptionRefused
    | Unsubscribed
    | Ready
    | EventQueued
    | EventIgnored
    | EventDropped
    | FailureNotice
    | SessionRotated
    | TurnStarted
    | TurnDelivered
    | ToolCall
    | AgentMessage
    | Usage
    | TurnCompleted
    | TurnFailed
    | LlmRetry,
    Field(discriminator="event"),
]

# A line whose record name this version does not know (or that has none) is not an error.
_UNKNOWN_RECORD = frozenset({"union_tag_invalid", "union_tag_not_found"})


class MalformedRecord(ValueError):
    """A line that is not a JSON object, or a known record whose fields have the wrong types."""


@cache
def _adapter() -> TypeAdapter[AnyRecord]:
    return TypeAdapter(AnyRecord)


def read_record(line: bytes | str) -> Record | None:
    """The record on one line, or None when its `event` names no record this version knows.

    Unknown fields are ignored (the writer may add fields freely); raises `MalformedRecord`.
    """
    try:
        record: Record = _adapter().validate_json(line, extra="ignore")
    except ValidationError as error:
        problems = error.errors(include_url=False)
        if problems[0]["type"] in _UNKNOWN_RECORD:
            return None
        first = problems[0]
        where = ".".join(str(part) for part in first["loc"][1:])
        raise MalformedRecord(f"{where}: {first['msg']}" if where else first["msg"]) from None
    return record
