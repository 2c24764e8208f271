"""The tool loop of one `session/prompt` (agent-harness.md §2.4, §2.9)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestra.agents.agent.config import AgentConfig
from orchestra.agents.agent.session import ClientChannel, Session
from orchestra.agents.agent.trajectory import TrajectoryRecorder
from orchestra.agents.agent.trimming import trim_history
from orchestra.agents.llm.client import LLMClient
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.types import (
    Conversation,
    LLMResponse,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)

if TYPE_CHECKING:
    from acp.schema import StopReason

log = logging.getLogger("buzz_agent")

CONTINUE_AFTER_TRUNCATION = (
    "Your previous response was cut off at the output limit. Continue from where it stopped, "
    "and keep individual tool calls small."
)
NOT_PERMITTED = "tool call was not permitted"
#: `_meta.buzz.stopDetail` of a turn that ended `max_tokens` because the conversation no longer
#: fits the model's context window and nothing more could be trimmed.
CONTEXT_EXHAUSTED = "context_exhausted"
#: `_meta.buzz.stopDetail` of a turn that ended `end_turn` because the server could not parse
#: the model's own output even after `INVALID_OUTPUT_RETRIES` corrective notes.
INVALID_OUTPUT = "invalid_output"
INVALID_OUTPUT_RETRIES = 2
#: `_meta.buzz.stopDetail` of a turn that ended `end_turn` because the model made the same
#: tool call (name and arguments) `max_repeated_calls` times in a row.
REPEATED_CALLS = "repeated_calls"
INVALID_OUTPUT_NOTE = (
    "The server could not parse your previous reply: its tool call was malformed. Answer "
    "again: call one of the given tools with valid JSON arguments, or reply in plain text."
)


@dataclass
class TurnResult:
    stop_reason: StopReason
    usage: Usage
    detail: str | None = None  # CONTEXT_EXHAUSTED, INVALID_OUTPUT, REPEATED_CALLS, or None


@dataclass
class RepeatedCalls:
    """Counts consecutive identical tool calls (name and arguments) over a turn."""

    limit: int  # 0: no limit
    last: tuple[str, str] | None = None
    run: int = 0

    def reached(self, calls: list[ToolCall]) -> bool:
        """Count `calls` in; True once `limit` identical calls came in a row."""
        for call in calls:
            key = (call.name, call.arguments)
            self.run = self.run + 1 if key == self.last else 1
            self.last = key
        return self.limit > 0 and self.run >= self.limit


class ContextExhausted(Exception):
    """The provider rejected the prompt as too long and trimming cannot shorten it."""


class InvalidOutput(Exception):
    """The server could not parse what the model produced (failures.py: `INVALID_OUTPUT`)."""


class Turn:
    def __init__(
        self,
        session: Session,
        config: AgentConfig,
        llm: LLMClient,
        client: ClientChannel,
        trajectory: TrajectoryRecorder,
    ) -> None:
        self.session = session
        self.config = config
        self.llm = llm
        self.client = client
        self.trajectory = trajectory
        self.usage = Usage()
        self._overflow_retry_used = False

    async def run(self, prompt_text: str) -> TurnResult:
        history = self.session.history
        self._add_user_message(UserMessage(prompt_text))
        rounds = 0
        recoveries = 0
        invalid_in_a_row = 0
        repeated = RepeatedCalls(self.config.max_repeated_calls)
        while True:
            self.session.round_start = len(history)
            if self.config.max_rounds and rounds == self.config.max_rounds:
                return self._stop("max_turn_requests")
            self._trim(self.config.trim_threshold)
            try:
                response = await self._call_llm(rounds + 1)
            except ContextExhausted:
                return self._stop("max_tokens", CONTEXT_EXHAUSTED)
            except InvalidOutput:
                # The model's invalid action, not an outage: ask again, outside the provider
                # retry budget, then end the turn as the model's (agent-harness.md §2.4).
                if invalid_in_a_row == INVALID_OUTPUT_RETRIES:
                    return self._stop("end_turn", INVALID_OUTPUT)
                invalid_in_a_row += 1
                self._add_user_message(UserMessage(INVALID_OUTPUT_NOTE, starts_turn=False))
                continue
            invalid_in_a_row = 0
            if response is None:  # context overflow absorbed by trimming; same round again
                continue
            rounds += 1
            await self._report(response)
            if response.outcome == "context_exceeded":
                self.trajectory.response(self.session.id, response, [])
                if self._take_overflow_retry():
                    continue
                return self._stop("max_tokens", CONTEXT_EXHAUSTED)
            message = response.message
            if response.outcome == "truncated":
                message.tool_calls = [c for c in message.tool_calls if c.arguments_are_valid()]
            history.append(message)
            self.trajectory.response(self.session.id, response, message.tool_calls)
            if message.tool_calls:
                await self._run_tools(message.tool_calls)
                if repeated.reached(message.tool_calls):  # stuck in a loop: the model's end
                    return self._stop("end_turn", REPEATED_CALLS)
            if response.outcome == "truncated":
                recoveries += 1
                if recoveries > self.config.max_token_recoveries:
                    return self._stop("max_tokens")
                self._add_user_message(UserMessage(CONTINUE_AFTER_TRUNCATION, starts_turn=False))
                continue
            if message.tool_calls or response.outcome == "pause":
                continue
            if response.outcome == "refusal":
                return self._stop("refusal")
            return self._stop("end_turn")

    def _add_user_message(self, message: UserMessage) -> None:
        self.session.history.append(message)
        self.trajectory.user(self.session.id, message.text)

    def _stop(self, reason: StopReason, detail: str | None = None) -> TurnResult:
        return TurnResult(stop_reason=reason, usage=self.usage, detail=detail)

    def _take_overflow_retry(self) -> bool:
        """Trim to half the estimate once per turn when the provider says the prompt is too
        long; False when that was already tried or nothing could be trimmed (the same request
        again would fail the same way)."""
        if self._overflow_retry_used:
            return False
        self._overflow_retry_used = True
        estimate = self.session.meter.estimate(self.session.history)
        self._trim(min(self.config.trim_threshold, estimate // 2))
        return self.session.meter.estimate(self.session.history) < estimate

    def _trim(self, threshold: int) -> None:
        trim_history(self.session.history, self.session.meter, threshold)

    async def _call_llm(self, round_number: int) -> LLMResponse | None:
        session = self.session
        conversation = Conversation(
            model=self.llm.model,
            system=session.system,
            history=list(session.history),
            tools=session.toolbox.specs,
            max_output_tokens=self.config.max_output_tokens,
            effort=self.llm.effort,
        )
        try:
            response = await self.llm.complete(conversation, round_number, self.client.retrying)
        except LLMError as err:
            if err.is_invalid_output:
                log.warning("invalid model output: %s", err.detail)
                raise InvalidOutput from None
            if not err.is_context_overflow:
                raise
            if self._take_overflow_retry():
                return None
            log.warning("context exhausted: %s", err.detail)
            raise ContextExhausted from None
        session.meter.record(response.usage.input_tokens, conversation.history)
        return response

    async def _report(self, response: LLMResponse) -> None:
        self.usage.add(response.usage)
        self.session.usage.add(response.usage)
        await self.client.usage(self.session.usage, self.llm.model, self.llm.effort)
        if response.thought:
            await self.client.thought(response.thought)
        if response.message.said:
            await self.client.message(response.message.said)

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        limit = self.config.max_tool_calls_per_response
        for index, call in enumerate(calls):
            await self.client.tool_started(call)
            if index >= limit:
                text, is_error = (
                    (f"too many tool calls in one response (limit {limit}); this call was not run"),
                    True,
                )
            else:
                text, is_error = await self._run_tool(call)
            self.session.history.append(ToolResult(call.id, text, is_error))
            self.trajectory.tool_result(self.session.id, call.id, text, is_error)
            await self.client.tool_finished(call, text, is_error)

    async def _run_tool(self, call: ToolCall) -> tuple[str, bool]:
        toolbox = self.session.toolbox
        if (problem := toolbox.problem(call)) is not None:
            return problem.text, problem.is_error
        if self.config.request_permission and not await self.client.may_run(call):
            return NOT_PERMITTED, True
        outcome = await toolbox.execute(call)
        return outcome.text, outcome.is_error
