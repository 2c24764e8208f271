"""Following `buzz-acp`'s JSON-lines event log and deriving agent state (orchestrator.md §7.10).

Readiness, turn boundaries, delivered events and usage come only from this log; human log
lines are never parsed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from orchestra.agents.acp.records import (
    AgentExited,
    AgentMessage,
    EventDropped,
    EventIgnored,
    EventQueued,
    FailureNotice,
    LlmRetry,
    MalformedRecord,
    Record,
    Shutdown,
    Subscribed,
    ToolCall,
    TurnCompleted,
    TurnDelivered,
    TurnFailed,
    TurnStarted,
    Usage,
    UsageCounters,
    read_record,
)
from orchestra.documents.enums import StopReason
from orchestra.trial.filewatch import watch_file


@dataclass
class SessionUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cached_reported: bool = False
    cache_write_input_tokens: int = 0
    llm_calls: int = 0  # model requests the session made

    def absorb(self, numbers: UsageCounters) -> None:
        """Counters are cumulative per session: keep the maximum seen."""
        self.input_tokens = max(self.input_tokens, _count(numbers.input_tokens))
        self.cache_write_input_tokens = max(
            self.cache_write_input_tokens, _count(numbers.cache_write_input_tokens)
        )
        self.output_tokens = max(self.output_tokens, _count(numbers.output_tokens))
        self.llm_calls = max(self.llm_calls, _count(numbers.llm_calls))
        if numbers.cached_input_tokens is not None:
            self.cached_reported = True
            self.cached_input_tokens = max(
                self.cached_input_tokens, _count(numbers.cached_input_tokens)
            )


def _count(value: int | None) -> int:
    return value if value is not None and value > 0 else 0


def _timestamp(record: Record) -> float | None:
    if record.ts is None:
        return None
    try:
        return datetime.fromisoformat(record.ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class AgentLogState:
    """What one agent's event log says so far."""

    subscribed_channels: set[str] = field(default_factory=set)
    starts: int = 0
    ends: int = 0
    turns_completed: int = 0
    #: how the last turn that ended ended, as a trial stop reason (None: none ended yet)
    last_turn: StopReason | None = None
    #: the ACP stop reason of the last completed turn as logged (`max_turn_requests`, say)
    last_acp_stop: str | None = None
    #: ACP stop reason -> completed turns that ended so
    turn_stops: dict[str, int] = field(default_factory=dict)
    tool_calls: int = 0  # distinct tool calls the agent made
    #: the longest run of consecutive tool calls with one title (tool name and arguments)
    longest_repeat: int = 0
    text_replies: int = 0  # non-empty text answers the agent ended turns with
    last_event_at: float | None = None  # monotonic time the last record was read
    delivered: set[str] = field(default_factory=set)
    queued: list[str] = field(default_factory=list)
    discarded: set[str] = field(default_factory=set)
    awaiting_retry: list[frozenset[str]] = field(default_factory=list)
    given_up: list[TurnFailed] = field(default_factory=list)  # `will_retry: false` failures
    sessions: dict[str, SessionUsage] = field(default_factory=dict)
    active_seconds: float = 0.0
    notes: list[dict[str, object]] = field(default_factory=list)
    _active_since: float | None = None
    _calls_seen: set[str] = field(default_factory=set)
    _repeat: tuple[str | None, int] = (None, 0)  # the last call's title and its run length

    @property
    def in_flight(self) -> int:
        return self.starts - self.ends + len(self.awaiting_retry)

    @property
    def pending(self) -> list[str]:
        return [
            event_id
            for event_id in self.queued
            if event_id not in self.delivered and event_id not in self.discarded
        ]

    def accounts_for(self, event_id: str) -> bool:
        """The log says what became of the event: delivered in a turn, ignored or dropped."""
        return event_id in self.delivered or event_id in self.discarded

    @property
    def ran_turns(self) -> bool:
        return self.starts > 0

    def apply(self, record: Record) -> None:
        was_active = self.in_flight > 0
        self.last_event_at = time.monotonic()
        match record:
            case Subscribed(channel_id=str(channel_id)):
                self.subscribed_channels.add(channel_id)
            case EventQueued(event_id=str(event_id)):
                self.queued.append(event_id)
            case EventIgnored(event_id=str(event_id)) | EventDropped(event_id=str(event_id)):
                self.discarded.add(event_id)
            case TurnStarted():
                self.starts += 1
                retried = frozenset(record.event_ids or ())
                if retried in self.awaiting_retry:
                    self.awaiting_retry.remove(retried)
            case TurnDelivered():
                self.delivered.update(record.event_ids or ())
            case ToolCall(tool_call_id=str(call_id)) if call_id not in self._calls_seen:
                self._calls_seen.add(call_id)
                self._count_call(record.title)
            case AgentMessage(text=str(text)) if text.strip():
                self.text_replies += 1
            case TurnCompleted():
                self.ends += 1
                self.turns_completed += 1
                self.last_turn = StopReason.of_turn(record.stop_reason)
                self.last_acp_stop = record.stop_reason
                stop = record.stop_reason or ""
                self.turn_stops[stop] = self.turn_stops.get(stop, 0) + 1
                if record.usage is not None and record.usage.session is not None:
                    self._session(record.session_id).absorb(record.usage.session)
            case TurnFailed():
                self.ends += 1
                self.last_turn = StopReason.TURN_FAILED
                if record.will_retry is True:
                    self.awaiting_retry.append(frozenset(record.event_ids or ()))
                elif record.will_retry is False:
                    self.given_up.append(record)
            case Usage():
                self._session(record.session_id).absorb(record.counters)
            case AgentExited() | FailureNotice() | Shutdown():  # copied to trial.log (§7.10)
                self.notes.append(record.model_dump(exclude_none=True))
        self._track_activity(was_active, _timestamp(record))

    def _count_call(self, title: str | None) -> None:
        self.tool_calls += 1
        last, run = self._repeat
        run = run + 1 if title is not None and title == last else 1
        self._repeat = (title, run)
        self.longest_repeat = max(self.longest_repeat, run)

    @property
    def requests(self) -> int:
        """Model requests over sessions (the agent's `llm_calls`; 0 when it reports none)."""
        return sum(s.llm_calls for s in self.sessions.values())

    def _session(self, session_id: str | None) -> SessionUsage:
        return self.sessions.setdefault(session_id or "", SessionUsage())

    def _track_activity(self, was_active: bool, at: float | None) -> None:
        active = self.in_flight > 0
        if at is None or was_active == active:
            return
        if active:
            self._active_since = at
        elif self._active_since is not None:
            self.active_seconds += max(0.0, at - self._active_since)
            self._active_since = None

    def usage_totals(self) -> tuple[int, int, int, bool]:
        """(input incl. cached, cached, output, any cached count reported) over sessions."""
        sessions = self.sessions.values()
        return (
            sum(s.input_tokens for s in sessions),
            sum(s.cached_input_tokens for s in sessions),
            sum(s.output_tokens for s in sessions),
            any(s.cached_reported for s in sessions),
        )

    def cache_write_total(self) -> int:
        """Prompt tokens written to the provider's cache over sessions (part of the input)."""
        return sum(s.cache_write_input_tokens for s in self.sessions.values())


class EventLogFollower:
    """Reads one event log as it grows (like `tail -F`) and folds records into a state.

    `on_change` is called after every batch of new records, so waiters can re-evaluate;
    `on_llm_retry` on each provider retry the agent reports (for the live progress).
    """

    def __init__(
        self,
        path: Path,
        *,
        on_change: Callable[[], None],
        on_bad_line: Callable[[str], None],
        on_llm_retry: Callable[[LlmRetry], None] = lambda _record: None,
    ) -> None:
        self.path = path
        self.state = AgentLogState()
        self._on_change = on_change
        self._on_bad_line = on_bad_line
        self._on_llm_retry = on_llm_retry
        self._offset = 0
        self._partial = b""

    def read_available(self) -> bool:
        """Consume complete lines written so far; True when any record was applied."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except FileNotFoundError:
            return False
        if not chunk:
            return False
        self._offset += len(chunk)
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        applied = False
        for line in lines:
            if not line.strip():
                continue
            try:
                record = read_record(line)
            except MalformedRecord:
                self._on_bad_line(line.decode("utf-8", "replace")[:200])
                continue
            if record is None:  # a record name this version does not know
                continue
            if isinstance(record, LlmRetry):
                self._on_llm_retry(record)
            self.state.apply(record)
            applied = True
        return applied

    async def follow(self) -> None:
        """Run until cancelled, reading whenever the file may have grown."""
        changes = watch_file(self.path)
        try:
            while True:
                if self.read_available():
                    self._on_change()
                await changes.wait()
        finally:
            changes.close()
