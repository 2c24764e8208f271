"""Running one turn on an agent slot (agent-harness.md §1.9).

Every turn that starts ends with exactly one outcome line and exactly one of the JSONL
records `turn_completed` / `turn_failed` with the same `turn_id`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from acp import RequestError

from orchestra.agents.acp.acp_client import USAGE_KEYS, TurnTracker, snake_usage
from orchestra.agents.acp.eventlog import EventLog, PromptLog
from orchestra.agents.acp.records import (
    AgentMessage,
    TurnCompleted,
    TurnDelivered,
    TurnFailed,
    TurnStarted,
    TurnUsage,
)
from orchestra.agents.acp.slot import AgentSlot
from orchestra.buzz import BuzzError

CANCEL_GRACE_S = 10.0
SHUTDOWN_GRACE_S = 5.0
log = logging.getLogger("pool::prompt")

OUTCOME_LINES = {
    "end_turn": "turn complete for channel {channel}: end_turn",
    "max_tokens": "turn hit max_tokens for channel {channel}",
    "max_turn_requests": "turn hit max_turn_requests for channel {channel}",
    "refusal": "turn refused for channel {channel}",
    "context_exhausted": "turn ended for channel {channel}: context window exhausted",
    "invalid_output": "turn ended for channel {channel}: the model's output could not be parsed",
}
#: buzz-agent's `_meta.buzz.stopDetail` values the event log records as the turn's stop
#: reason: a `max_tokens` turn whose prompt no longer fits the context window
#: (`context_exhausted`), an `end_turn` after output the server could not parse
#: (`invalid_output`, agent-harness.md §2.4).
STOP_DETAILS = frozenset({"context_exhausted", "invalid_output"})


def stop_detail(response_meta: Any) -> str | None:
    buzz = response_meta.get("buzz") if isinstance(response_meta, dict) else None
    detail = buzz.get("stopDetail") if isinstance(buzz, dict) else None
    return detail if isinstance(detail, str) else None


@dataclass(frozen=True)
class TurnOutcome:
    completed: bool
    stop_reason: str | None = None
    cancel_reason: str | None = None
    error: str | None = None
    retryable: bool = False
    error_kind: str | None = None  # the JSON-RPC error's `data.kind` (agent-harness.md §2.2)
    http_status: int | None = None  # its `data.status`: the provider's HTTP status
    failure_class: str | None = None  # its `data.class` (orchestra/agents/llm/failures.py)
    agent_killed: bool = False
    turn_id: str = ""
    duration_ms: int = 0
    response_meta: Any = None  # the prompt response's `_meta` (turn usage)


@dataclass(frozen=True)
class TurnRequest:
    channel_id: str
    event_ids: list[str]
    text: str
    attempt: int
    max_attempts: int
    session_id: str
    session_new: bool


@dataclass(frozen=True)
class Limits:
    idle_timeout_s: float
    max_turn_duration_s: float


def zero_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_KEYS.values(), 0)


def turn_usage(
    response_meta: Any, start: dict[str, int], end: dict[str, int] | None
) -> dict[str, dict[str, int]]:
    """The prompt response's `_meta.buzz.usage`, else the session counters' difference."""
    buzz = response_meta.get("buzz") if isinstance(response_meta, dict) else None
    usage = buzz.get("usage") if isinstance(buzz, dict) else None
    if isinstance(usage, dict) and isinstance(usage.get("turn"), dict):
        return {"turn": snake_usage(usage["turn"]), "session": snake_usage(usage.get("session"))}
    session = end or start
    return {"turn": {k: session[k] - start[k] for k in session}, "session": dict(session)}


@dataclass(frozen=True)
class ErrorDescription:
    """A failed prompt as the event log records it."""

    message: str
    retryable: bool
    kind: str | None = None  # `data.kind` of a JSON-RPC error (`llm_http_error`, …)
    http_status: int | None = None  # `data.status`, the provider's HTTP status
    failure_class: str | None = None  # `data.class`

    def outcome(self, **fields: Any) -> TurnOutcome:
        return TurnOutcome(
            completed=False,
            error=self.message,
            retryable=self.retryable,
            error_kind=self.kind,
            http_status=self.http_status,
            failure_class=self.failure_class,
            **fields,
        )


def describe_error(error: BaseException) -> ErrorDescription:
    """Agent exit and `data.retryable` errors are retryable; a JSON-RPC error's `data.kind`
    and `data.status` say whether the provider gave up (orchestrator.md §12)."""
    if isinstance(error, RequestError):
        data = error.data if isinstance(error.data, dict) else {}
        detail = data.get("detail") or data.get("details") or str(error)
        kind, status, failure = data.get("kind"), data.get("status"), data.get("class")
        return ErrorDescription(
            f"{error} ({detail})" if detail != str(error) else str(error),
            data.get("retryable") is True,
            kind if isinstance(kind, str) else None,
            status if isinstance(status, int) and not isinstance(status, bool) else None,
            failure if isinstance(failure, str) else None,
        )
    if isinstance(error, ConnectionError | EOFError | BrokenPipeError):
        return ErrorDescription("agent process exited", True)
    if isinstance(error, TimeoutError):
        return ErrorDescription("the agent did not answer in time", False)
    return ErrorDescription(f"{type(error).__name__}: {error}", False)


class TurnRunner:
    def __init__(self, events: EventLog, prompts: PromptLog, limits: Limits) -> None:
        self._events = events
        self._prompts = prompts
        self._limits = limits
        self.session_usage: dict[str, dict[str, int]] = {}

    def record_session_usage(self, session_id: str, usage: dict[str, int]) -> None:
        self.session_usage[session_id] = usage

    async def run(
        self, slot: AgentSlot, request: TurnRequest, shutdown: asyncio.Event
    ) -> TurnOutcome:
        turn_id = f"turn_{uuid.uuid4().hex[:16]}"
        channel, session_id = request.channel_id, request.session_id
        log.info(
            "turn starting for channel %s: %d event(s), session %s, attempt %d",
            channel,
            len(request.event_ids),
            session_id,
            request.attempt,
        )
        self._events.emit(
            TurnStarted(
                turn_id=turn_id,
                channel_id=channel,
                slot=slot.index,
                session_id=session_id,
                session_new=request.session_new,
                event_ids=request.event_ids,
                attempt=request.attempt,
                prompt_chars=len(request.text),
                prompt_sha256=hashlib.sha256(request.text.encode()).hexdigest(),
            )
        )
        self._prompts.write(
            "prompt", request.text, turn_id=turn_id, channel_id=channel, session_id=session_id
        )
        start_usage = dict(self.session_usage.get(session_id) or zero_usage())
        tracker = TurnTracker(turn_id=turn_id, channel_id=channel, session_id=session_id)
        slot.client.turns[session_id] = tracker
        started = time.monotonic()
        prompt_task = asyncio.create_task(slot.prompt(session_id, request.text))
        await asyncio.sleep(0)  # let the request be written before announcing delivery
        log.info(
            "turn delivered Buzz events for channel %s: %s", channel, ", ".join(request.event_ids)
        )
        self._events.emit(
            TurnDelivered(turn_id=turn_id, channel_id=channel, event_ids=request.event_ids)
        )
        try:
            outcome = await self._await_outcome(slot, prompt_task, tracker, started, shutdown)
        finally:
            slot.client.turns.pop(session_id, None)
        outcome = replace(
            outcome, turn_id=turn_id, duration_ms=round((time.monotonic() - started) * 1000)
        )
        text, truncated = tracker.message_text()
        if text:
            self._events.emit(
                AgentMessage(turn_id=turn_id, channel_id=channel, text=text, truncated=truncated)
            )
        if outcome.completed:
            self._finish_completed(request, outcome, start_usage)
        return outcome

    async def _await_outcome(
        self,
        slot: AgentSlot,
        prompt_task: asyncio.Task[Any],
        tracker: TurnTracker,
        started: float,
        shutdown: asyncio.Event,
    ) -> TurnOutcome:
        limits = self._limits
        shutdown_wait = asyncio.create_task(shutdown.wait())
        try:
            while not prompt_task.done():
                now = time.monotonic()
                idle_left = tracker.last_activity + limits.idle_timeout_s - now
                total_left = started + limits.max_turn_duration_s - now
                if shutdown.is_set():
                    return await self._cancel(slot, prompt_task, tracker, "shutdown")
                if total_left <= 0:
                    return await self._cancel(slot, prompt_task, tracker, "max_turn_duration")
                if idle_left <= 0:
                    return await self._cancel(slot, prompt_task, tracker, "idle_timeout")
                await asyncio.wait(
                    {prompt_task, shutdown_wait},
                    timeout=min(idle_left, total_left),
                    return_when=asyncio.FIRST_COMPLETED,
                )
        finally:
            shutdown_wait.cancel()
        outcome = self._response_outcome(prompt_task, None)
        if isinstance(prompt_task.exception(), ConnectionError):
            slot.lost_turn = True
        return outcome

    async def _cancel(
        self, slot: AgentSlot, prompt_task: asyncio.Task[Any], tracker: TurnTracker, reason: str
    ) -> TurnOutcome:
        with contextlib.suppress(Exception):
            await slot.cancel(tracker.session_id)
        grace = SHUTDOWN_GRACE_S if reason == "shutdown" else CANCEL_GRACE_S
        done, _ = await asyncio.wait({prompt_task}, timeout=grace)
        if not done:
            prompt_task.cancel()
            with contextlib.suppress(BaseException):
                await prompt_task
            await slot.kill()
            return TurnOutcome(
                completed=False,
                error=f"agent did not answer session/cancel within {grace:.0f} s ({reason})",
                retryable=False,
                agent_killed=True,
                cancel_reason=reason,
            )
        return self._response_outcome(prompt_task, reason)

    @staticmethod
    def _response_outcome(prompt_task: asyncio.Task[Any], cancel_reason: str | None) -> TurnOutcome:
        error = prompt_task.exception()
        if error is not None:
            return describe_error(error).outcome()
        response = prompt_task.result()
        stop_reason = str(response.stop_reason)
        detail = stop_detail(response.field_meta)
        if detail is not None and detail in STOP_DETAILS:
            stop_reason = detail
        return TurnOutcome(
            completed=True,
            stop_reason=stop_reason,
            cancel_reason=(cancel_reason or "agent") if stop_reason == "cancelled" else None,
            response_meta=response.field_meta,
        )

    def _finish_completed(
        self, request: TurnRequest, outcome: TurnOutcome, start: dict[str, int]
    ) -> None:
        channel = request.channel_id
        if outcome.stop_reason == "cancelled":
            log.info("turn cancelled for channel %s: %s", channel, outcome.cancel_reason)
        else:
            line = OUTCOME_LINES.get(
                str(outcome.stop_reason),
                "turn ended for channel {channel}: " + str(outcome.stop_reason),
            )
            log.info(line.format(channel=channel))
        self._events.emit(
            TurnCompleted(
                turn_id=outcome.turn_id,
                channel_id=channel,
                session_id=request.session_id,
                stop_reason=outcome.stop_reason,
                cancel_reason=outcome.cancel_reason if outcome.stop_reason == "cancelled" else None,
                duration_ms=outcome.duration_ms,
                event_ids=request.event_ids,
                usage=TurnUsage.model_validate(
                    turn_usage(
                        outcome.response_meta, start, self.session_usage.get(request.session_id)
                    )
                ),
            )
        )

    def fail_before_prompt(
        self, slot: AgentSlot, request: TurnRequest, error: BaseException
    ) -> TurnOutcome:
        """The turn could not be set up (no session, relay query failed)."""
        turn_id = f"turn_{uuid.uuid4().hex[:16]}"
        if isinstance(error, BuzzError):
            described = ErrorDescription(f"relay: {error.message}", error.retryable)
        else:
            described = describe_error(error)
        log.info(
            "turn starting for channel %s: %d event(s), session none, attempt %d",
            request.channel_id,
            len(request.event_ids),
            request.attempt,
        )
        self._events.emit(
            TurnStarted(
                turn_id=turn_id,
                channel_id=request.channel_id,
                slot=slot.index,
                session_new=False,
                event_ids=request.event_ids,
                attempt=request.attempt,
                prompt_chars=0,
            )
        )
        return replace(
            described.outcome(turn_id=turn_id),
            error=f"could not start the turn: {described.message}",
        )

    def finish_failed(
        self, request: TurnRequest, outcome: TurnOutcome, retry_in_s: float | None
    ) -> None:
        """Log the failure; `retry_in_s` is None when the bridge gives up."""
        k, n = request.attempt, request.max_attempts
        suffix = f"retry in {retry_in_s:.0f}s" if retry_in_s is not None else "giving up"
        log.warning(
            "turn failed for channel %s: %s (attempt %d/%d, %s)",
            request.channel_id,
            outcome.error,
            k,
            n,
            suffix,
        )
        self._events.emit(
            TurnFailed(
                turn_id=outcome.turn_id,
                channel_id=request.channel_id,
                session_id=request.session_id or None,
                error=outcome.error,
                retryable=outcome.retryable,
                error_kind=outcome.error_kind,
                http_status=outcome.http_status,
                failure_class=outcome.failure_class,
                attempt=k,
                will_retry=retry_in_s is not None,
                retry_in_s=retry_in_s,
                duration_ms=outcome.duration_ms,
                event_ids=request.event_ids,
            )
        )
