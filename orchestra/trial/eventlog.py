"""Following `buzz-acp`'s JSON-lines event log and deriving agent state (orchestrator.md §7.10).

Readiness, turn boundaries, delivered events and usage come only from this log; human log
lines are never parsed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestra.trial.filewatch import watch_file

NOTED_RECORDS = ("agent_exited", "failure_notice", "shutdown")


@dataclass
class SessionUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cached_reported: bool = False

    def absorb(self, numbers: dict[str, Any]) -> None:
        """Counters are cumulative per session: keep the maximum seen."""
        self.input_tokens = max(self.input_tokens, _count(numbers.get("input_tokens")))
        self.output_tokens = max(self.output_tokens, _count(numbers.get("output_tokens")))
        if isinstance(numbers.get("cached_input_tokens"), int):
            self.cached_reported = True
            self.cached_input_tokens = max(
                self.cached_input_tokens, _count(numbers.get("cached_input_tokens"))
            )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _timestamp(record: dict[str, Any]) -> float | None:
    text = record.get("ts")
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class AgentLogState:
    """What one agent's event log says so far."""

    subscribed_channels: set[str] = field(default_factory=set)
    starts: int = 0
    ends: int = 0
    turns_completed: int = 0
    delivered: set[str] = field(default_factory=set)
    queued: list[str] = field(default_factory=list)
    discarded: set[str] = field(default_factory=set)
    awaiting_retry: list[frozenset[str]] = field(default_factory=list)
    sessions: dict[str, SessionUsage] = field(default_factory=dict)
    active_seconds: float = 0.0
    notes: list[dict[str, Any]] = field(default_factory=list)
    _active_since: float | None = None

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

    @property
    def ran_turns(self) -> bool:
        return self.starts > 0

    def apply(self, record: dict[str, Any]) -> None:
        name = record.get("event")
        was_active = self.in_flight > 0
        event_ids = [i for i in record.get("event_ids") or [] if isinstance(i, str)]
        if name == "subscribed" and isinstance(record.get("channel_id"), str):
            self.subscribed_channels.add(record["channel_id"])
        elif name == "event_queued" and isinstance(record.get("event_id"), str):
            self.queued.append(record["event_id"])
        elif name in ("event_ignored", "event_dropped") and isinstance(record.get("event_id"), str):
            self.discarded.add(record["event_id"])
        elif name == "turn_started":
            self.starts += 1
            retried = frozenset(event_ids)
            if retried in self.awaiting_retry:
                self.awaiting_retry.remove(retried)
        elif name == "turn_delivered":
            self.delivered.update(event_ids)
        elif name == "turn_completed":
            self.ends += 1
            self.turns_completed += 1
            usage = record.get("usage")
            session = usage.get("session") if isinstance(usage, dict) else None
            if isinstance(session, dict):
                self._session(record).absorb(session)
        elif name == "turn_failed":
            self.ends += 1
            if record.get("will_retry") is True:
                self.awaiting_retry.append(frozenset(event_ids))
        elif name == "usage":
            self._session(record).absorb(record)
        if name in NOTED_RECORDS:
            self.notes.append(record)
        self._track_activity(was_active, _timestamp(record))

    def _session(self, record: dict[str, Any]) -> SessionUsage:
        session_id = str(record.get("session_id") or "")
        return self.sessions.setdefault(session_id, SessionUsage())

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


class EventLogFollower:
    """Reads one event log as it grows (like `tail -F`) and folds records into a state.

    `on_change` is called after every batch of new records, so waiters can re-evaluate.
    """

    def __init__(
        self,
        path: Path,
        *,
        on_change: Callable[[], None],
        on_bad_line: Callable[[str], None],
    ) -> None:
        self.path = path
        self.state = AgentLogState()
        self._on_change = on_change
        self._on_bad_line = on_bad_line
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
                record = json.loads(line)
            except ValueError:
                record = None
            if not isinstance(record, dict):
                self._on_bad_line(line.decode("utf-8", "replace")[:200])
                continue
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
