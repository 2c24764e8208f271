"""One agent's ATIF trajectory as Inspect AI's chat messages and transcript events
(docs/decisions.md D77): the sample's Messages tab and its Transcript tab. Imported only through
`inspect_log`, which the CLI loads when `orchestra export inspect` runs.

A system or user step is a system or user message; an agent step is the assistant's message
(reasoning, text, tool calls) followed by one tool message per result. The transcript holds the
agent's span, a model event per agent step (its input the messages since the previous reply,
its usage the step's metrics) and a tool event per call with its result.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from inspect_ai.event import Event, ModelEvent, SpanBeginEvent, SpanEndEvent, ToolEvent
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentReasoning,
    ContentText,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
    StopReason,
)
from inspect_ai.tool import ToolCall

from orchestra.agents.trajectory.atif import Step, Trajectory


@dataclass
class AgentTranscript:
    messages: list[ChatMessage] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def agent_transcript(trajectory: Trajectory, agent_id: str, model: str) -> AgentTranscript:
    tag = {"agent_id": agent_id}
    span = f"agent-{agent_id}"
    first = moment(trajectory.steps[0].timestamp)
    transcript = AgentTranscript(
        events=[SpanBeginEvent(id=span, name=agent_id, type="agent", timestamp=first)]
    )
    since_reply: list[ChatMessage] = []
    for step in trajectory.steps:
        if step.source == "agent":
            reply, tools = agent_step_messages(step, model, tag)
            transcript.events.append(model_event(step, model, agent_id, since_reply, reply, span))
            transcript.events.extend(tool_events(step, tools, span))
            transcript.messages += [reply, *tools]
            since_reply = list(tools)
            continue
        message: ChatMessage = (
            ChatMessageSystem(content=step.message, metadata=tag)
            if step.source == "system"
            else ChatMessageUser(content=step.message, metadata=tag)
        )
        transcript.messages.append(message)
        since_reply.append(message)
    last = moment(trajectory.steps[-1].timestamp)
    transcript.events.append(SpanEndEvent(id=span, timestamp=last))
    for event in transcript.events:  # the viewer shows only events with an id, as Inspect's have
        event.uuid = uuid.uuid4().hex
    return transcript


def agent_step_messages(
    step: Step, model: str, tag: dict[str, str]
) -> tuple[ChatMessageAssistant, list[ChatMessageTool]]:
    calls = step.tool_calls or []
    content: list[ContentText | ContentReasoning] = []
    if step.reasoning_content:
        content.append(ContentReasoning(reasoning=step.reasoning_content))
    if step.message:
        content.append(ContentText(text=step.message))
    reply = ChatMessageAssistant(
        content=list(content) if content else "",
        tool_calls=[
            ToolCall(id=c.tool_call_id, function=c.function_name, arguments=c.arguments)
            for c in calls
        ]
        or None,
        model=model,
        metadata=tag,
    )
    functions = {call.tool_call_id: call.function_name for call in calls}
    results = step.observation.results if step.observation else []
    tools = [
        ChatMessageTool(
            content=result.content,
            tool_call_id=result.source_call_id,
            function=functions.get(result.source_call_id),
            metadata=tag,
        )
        for result in results
    ]
    return reply, tools


def model_event(
    step: Step,
    model: str,
    agent_id: str,
    since_reply: list[ChatMessage],
    reply: ChatMessageAssistant,
    span: str,
) -> ModelEvent:
    metrics = step.metrics
    usage = (
        ModelUsage(
            input_tokens=(metrics.prompt_tokens or 0) - (metrics.cached_tokens or 0),
            input_tokens_cache_read=metrics.cached_tokens,
            output_tokens=metrics.completion_tokens or 0,
            total_tokens=(metrics.prompt_tokens or 0) + (metrics.completion_tokens or 0),
            total_cost=metrics.cost_usd,
        )
        if metrics is not None
        else None
    )
    stop: StopReason = "tool_calls" if reply.tool_calls else "stop"
    return ModelEvent(
        model=model,
        role=agent_id,
        input=since_reply,
        tools=[],
        tool_choice="auto",
        config=GenerateConfig(),
        output=ModelOutput(
            model=model,
            choices=[ChatCompletionChoice(message=reply, stop_reason=stop)],
            usage=usage,
        ),
        timestamp=moment(step.timestamp),
        span_id=span,
    )


def tool_events(step: Step, tools: list[ChatMessageTool], span: str) -> list[Event]:
    results = {tool.tool_call_id: tool.text for tool in tools}
    return [
        ToolEvent(
            id=call.tool_call_id,
            function=call.function_name,
            arguments=call.arguments,
            result=results.get(call.tool_call_id, ""),
            timestamp=moment(step.timestamp),
            span_id=span,
        )
        for call in step.tool_calls or []
    ]


def moment(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)
