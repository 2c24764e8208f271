"""The Agent Trajectory Interchange Format (ATIF) document, as Harbor reads it
(`harbor.models.trajectories`, schema `ATIF-v1.6`).

Only the fields this project writes, and stricter than Harbor in what it accepts, so that a file
that parses here also parses there: unknown keys are errors at every level; step ids run 1, 2, …
without gaps; `reasoning_content`, `tool_calls` and `metrics` belong to `agent` steps only; every
tool call of a step has exactly one result in that step's observation and every result answers
one of the step's calls; `final_metrics` are the sums over the steps.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SchemaVersion = Literal["ATIF-v1.6"]
SCHEMA_VERSION: SchemaVersion = "ATIF-v1.6"
Tokens = Annotated[int, Field(ge=0)]
Source = Literal["system", "user", "agent"]


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class AgentInfo(Part):
    name: str
    version: str
    model_name: str | None = None
    #: OpenAI function-calling shape: `{"type": "function", "function": {name, description,
    #: parameters}}`.
    tool_definitions: list[dict[str, Any]] | None = None


class ToolCall(Part):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class ObservationResult(Part):
    source_call_id: str
    content: str


class Observation(Part):
    results: list[ObservationResult]


class Metrics(Part):
    prompt_tokens: Tokens | None = None  # cached tokens included
    completion_tokens: Tokens | None = None  # reasoning tokens included
    cached_tokens: Tokens | None = None
    cost_usd: float | None = None
    # ATIF's open extension object; holds `cache_write_tokens` when the provider reported any.
    extra: dict[str, Any] | None = None


AGENT_ONLY_FIELDS = ("reasoning_content", "tool_calls", "metrics")


class Step(Part):
    step_id: Annotated[int, Field(ge=1)]
    timestamp: str
    source: Source
    message: str
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    # ATIF's step-level extension object; holds `stop_reason` for a response that ended its
    # turn other than by its text (`refusal`).
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str) -> str:
        datetime.fromisoformat(value.replace("Z", "+00:00"))  # ValueError names the problem
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.source != "agent":
            for name in AGENT_ONLY_FIELDS:
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} is only allowed on agent steps, not {self.source}")
        calls = Counter(call.tool_call_id for call in self.tool_calls or ())
        if any(count > 1 for count in calls.values()):
            raise ValueError(f"step {self.step_id}: tool_call_id used twice in one step")
        results = Counter(
            result.source_call_id
            for result in (self.observation.results if self.observation else ())
        )
        if calls != results:
            raise ValueError(
                f"step {self.step_id}: tool results {sorted(results)} do not match "
                f"the tool calls {sorted(calls)}"
            )
        return self


class FinalMetrics(Part):
    total_prompt_tokens: Tokens
    total_completion_tokens: Tokens
    total_cached_tokens: Tokens
    total_cost_usd: float | None = None  # None: a step was not priced
    total_steps: Tokens


def final_metrics(steps: list[Step]) -> FinalMetrics:
    """The sums over the steps' metrics; the cost is None when any priced step has none."""
    metrics = [step.metrics for step in steps if step.metrics is not None]
    costs = [m.cost_usd for m in metrics]
    return FinalMetrics(
        total_prompt_tokens=sum(m.prompt_tokens or 0 for m in metrics),
        total_completion_tokens=sum(m.completion_tokens or 0 for m in metrics),
        total_cached_tokens=sum(m.cached_tokens or 0 for m in metrics),
        total_cost_usd=None if None in costs else sum(c for c in costs if c is not None),
        total_steps=len(steps),
    )


class Trajectory(Part):
    schema_version: SchemaVersion = SCHEMA_VERSION
    session_id: str
    agent: AgentInfo
    steps: Annotated[list[Step], Field(min_length=1)]
    final_metrics: FinalMetrics

    @model_validator(mode="after")
    def _contiguous_and_summed(self) -> Self:
        for index, step in enumerate(self.steps, start=1):
            if step.step_id != index:
                raise ValueError(f"steps[{index - 1}].step_id is {step.step_id}, expected {index}")
        expected = final_metrics(self.steps)
        actual = self.final_metrics
        if actual.model_copy(update={"total_cost_usd": None}) != expected.model_copy(
            update={"total_cost_usd": None}
        ) or not _same_cost(actual.total_cost_usd, expected.total_cost_usd):
            raise ValueError(f"final_metrics {actual} are not the sums over the steps {expected}")
        return self

    def to_document(self) -> dict[str, Any]:
        """The JSON object, absent optional fields left out (as Harbor writes them)."""
        return self.model_dump(mode="json", exclude_none=True)


def _same_cost(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
