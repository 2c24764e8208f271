"""The strict ATIF model (Harbor's `ATIF-v1.6` fields): what it accepts and what it refuses."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from orchestra.agents.trajectory.atif import Trajectory


def document() -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "trial:solo-1",
        "agent": {"name": "buzz-agent", "version": "0.1.0", "model_name": "m"},
        "steps": [
            {"step_id": 1, "timestamp": "2026-11-29T17:42:03.123456Z", "source": "system",
             "message": "[Base]"},
            {"step_id": 2, "timestamp": "2026-11-29T17:42:04.000000Z", "source": "user",
             "message": "[Context]"},
            {"step_id": 3, "timestamp": "2026-11-29T17:42:05.000000Z", "source": "agent",
             "message": "", "reasoning_content": "think",
             "tool_calls": [{"tool_call_id": "c1", "function_name": "shell",
                             "arguments": {"command": "ls"}}],
             "observation": {"results": [{"source_call_id": "c1", "content": "[exit code: 0]"}]},
             "metrics": {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 4,
                         "cost_usd": 0.5}},
        ],
        "final_metrics": {"total_prompt_tokens": 10, "total_completion_tokens": 2,
                          "total_cached_tokens": 4, "total_cost_usd": 0.5, "total_steps": 3},
    }  # fmt: skip


def test_a_complete_document_round_trips() -> None:
    trajectory = Trajectory.model_validate(document())
    assert trajectory.to_document() == document()
    assert Trajectory.model_validate_json(trajectory.model_dump_json()) == trajectory


def changed(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(document())
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("extra",), {}, "Extra inputs are not permitted"),
        (("agent", "extra"), 1, "Extra inputs are not permitted"),
        (("steps", 2, "tool_calls", 0, "extra"), 1, "Extra inputs are not permitted"),
        (("schema_version",), "ATIF-v9", "Input should be 'ATIF-v1.6'"),
        (("steps", 1, "step_id"), 3, "steps[1].step_id is 3, expected 2"),
        (("steps", 0, "step_id"), 0, "greater than or equal to 1"),
        (("steps", 1, "source"), "tool", "Input should be 'system', 'user' or 'agent'"),
        (("steps", 1, "reasoning_content"), "x", "reasoning_content is only allowed on agent"),
        (("steps", 0, "metrics"), {}, "metrics is only allowed on agent steps"),
        (("steps", 1, "timestamp"), "yesterday", "Invalid isoformat"),
        (("steps", 2, "observation"), KeyError, "do not match the tool calls ['c1']"),
        (("steps", 2, "observation", "results", 0, "source_call_id"), "c2", "do not match"),
        (("steps", 2, "tool_calls", 0, "arguments"), "ls", "valid dictionary"),
        (("steps", 2, "metrics", "prompt_tokens"), "10", "valid integer"),
        (("final_metrics", "total_steps"), 2, "are not the sums over the steps"),
        (("final_metrics", "total_cost_usd"), 0.25, "are not the sums over the steps"),
        (("steps",), [], "at least 1 item"),
    ],
)
def test_what_breaks_the_format_is_refused(path: tuple[Any, ...], value: Any, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem.replace("[", r"\[").replace("(", r"\(")):
        Trajectory.model_validate(changed(path, value))


def test_two_results_for_one_call_are_refused() -> None:
    doc = document()
    results = doc["steps"][2]["observation"]["results"]
    results.append(dict(results[0]))
    with pytest.raises(ValidationError, match="do not match"):
        Trajectory.model_validate(doc)
