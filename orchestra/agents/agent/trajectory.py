"""buzz-agent's trajectory: every step written to the side file as it happens
(agent-harness.md §2.13), so that what the model saw and did survives the agent being killed.

buzz-agent writes every step itself: it is the one process that sees the system prompt as the
model gets it (with its own hints, §2.3), each user message (the prompt's text blocks joined,
and its own continuation requests), each response and each tool result as the model receives it.
"""

from __future__ import annotations

import logging

from orchestra.agents.agent.tools import elide_middle
from orchestra.agents.llm.openai_chat import tool_result_text
from orchestra.agents.llm.types import LLMResponse, ToolCall, ToolResult, ToolSpec
from orchestra.agents.trajectory import atif
from orchestra.agents.trajectory.sidefile import (
    AgentLine,
    Line,
    SideFileWriter,
    SystemLine,
    ToolResultLine,
    UserLine,
)
from orchestra.jsonio import utc_timestamp

log = logging.getLogger("buzz_agent")

#: A tool result longer than this (UTF-8 bytes) keeps its head and tail in the trajectory.
TRAJECTORY_RESULT_LIMIT = 64 * 1024
TRAJECTORY_CUT_MARKER = "[… {n} bytes cut from the trajectory …]"
#: `arguments` must be an object in ATIF; text that is not one is kept under this key.
UNPARSED_ARGUMENTS = "_unparsed"


def tool_definition(spec: ToolSpec) -> dict[str, object]:
    """The OpenAI function-calling shape ATIF's `tool_definitions` use."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        },
    }


def cache_write_extra(tokens: int) -> dict[str, object] | None:
    """ATIF metrics' `extra` for prompt tokens written to the provider's cache (part of
    `prompt_tokens`, priced apart); None when there were none."""
    return {"cache_write_tokens": tokens} if tokens else None


def call_arguments(call: ToolCall) -> dict[str, object]:
    try:
        return call.parsed_arguments()
    except ValueError:
        return {UNPARSED_ARGUMENTS: call.arguments}


class TrajectoryRecorder:
    """Writes the steps of every session of this process; does nothing without a side file.

    A failed write is logged once and ends the recording: the trajectory is an observation of
    the run and must never change it.
    """

    def __init__(self, writer: SideFileWriter | None, *, name: str, version: str, model: str):
        self._writer = writer
        self._name, self._version, self._model = name, version, model

    @classmethod
    def open(cls, path: str | None, *, name: str, version: str, model: str) -> TrajectoryRecorder:
        """Raises OSError when the side file cannot be opened."""
        writer = None if path is None else SideFileWriter(path)
        return cls(writer, name=name, version=version, model=model)

    def system(self, session_id: str, text: str, tools: list[ToolSpec]) -> None:
        agent = atif.AgentInfo(
            name=self._name,
            version=self._version,
            model_name=self._model,
            tool_definitions=[tool_definition(spec) for spec in tools],
        )
        self._write(SystemLine(ts=utc_timestamp(), session_id=session_id, text=text, agent=agent))

    def user(self, session_id: str, text: str) -> None:
        self._write(UserLine(ts=utc_timestamp(), session_id=session_id, text=text))

    def response(self, session_id: str, response: LLMResponse, calls: list[ToolCall]) -> None:
        """`calls`: the response's tool calls that the loop will run (and answer)."""
        usage = response.usage
        self._write(
            AgentLine(
                ts=utc_timestamp(),
                session_id=session_id,
                text=response.message.said,
                reasoning=response.thought or None,
                tool_calls=[
                    atif.ToolCall(
                        tool_call_id=call.id,
                        function_name=call.name,
                        arguments=call_arguments(call),
                    )
                    for call in calls
                ],
                usage=atif.Metrics(
                    prompt_tokens=usage.input_tokens,
                    completion_tokens=usage.output_tokens,
                    cached_tokens=usage.cached_tokens,
                    extra=cache_write_extra(usage.cache_write_tokens),
                ),
                stop_reason="refusal" if response.outcome == "refusal" else None,
            )
        )

    def tool_result(self, session_id: str, call_id: str, text: str, is_error: bool) -> None:
        """`content` as the OpenAI routes show it to the model (`ERROR: ` for an error)."""
        kept = elide_middle(text, TRAJECTORY_RESULT_LIMIT, TRAJECTORY_CUT_MARKER)
        self._write(
            ToolResultLine(
                ts=utc_timestamp(),
                session_id=session_id,
                call_id=call_id,
                content=tool_result_text(ToolResult(call_id, kept, is_error)),
                is_error=is_error,
            )
        )

    def _write(self, line: Line) -> None:
        if self._writer is None:
            return
        try:
            self._writer.write(line)
        except OSError as error:
            log.error(
                "trajectory side file %s: write failed (%s); no further steps are recorded",
                self._writer.path,
                error.strerror or error,
            )
            self.close()

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
