"""Each agent's ATIF trajectory, assembled from its side file at teardown (orchestrator.md §7.16).

buzz-agent appends its steps to `<agent id>.trajectory.jsonl` as they happen (agent-harness.md
§2.13); after the agents stopped and their logs were collected, this turns the lines into
`<agent id>.trajectory.json`: steps numbered from 1 in the order they happened, every tool
result attached to the response that made the call, every response's tokens priced with the
agent's endpoint price (§7.14), and the totals. The document is validated by its model before
it is written, and it is written before the secret scan (§7.15) so that the scan covers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestra.agents.trajectory.atif import (
    AgentInfo,
    Metrics,
    Step,
    Trajectory,
    final_metrics,
)
from orchestra.agents.trajectory.sidefile import (
    AgentLine,
    Line,
    SideLine,
    SystemLine,
    ToolResultLine,
    UserLine,
    read_side_file,
)
from orchestra.config.manifest import AgentSlot
from orchestra.jsonio import write_json_atomic
from orchestra.paths import TrialPaths
from orchestra.trial.accounting import Price, cost_usd

#: The result of a call whose tool never answered (the agent was stopped or the turn cancelled).
NO_RESULT = "[no result: the tool call did not finish before the turn or the agent ended]"


@dataclass(frozen=True)
class AgentTrajectorySource:
    """What the trial knows about one agent: where its side file is, how it is priced, and
    who it is when the file has no system step to say so."""

    agent_id: str
    price: Price
    fallback: AgentInfo


@dataclass
class _Assembly:
    steps: list[dict[str, Any]] = field(default_factory=list)
    # (session id, tool call id) -> the agent step whose call still awaits its result
    open_calls: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    agent: AgentInfo | None = None
    notes: list[str] = field(default_factory=list)
    unanswered: int = 0

    def add(self, line: SideLine, price: Price) -> None:
        match line:
            case SystemLine():
                self.agent = self.agent or line.agent
                self._step(line, "system", line.text)
            case UserLine():
                self._step(line, "user", line.text)
            case AgentLine():
                self._response(line, price)
            case ToolResultLine():
                self._result(line)

    def _step(self, line: Line, source: str, message: str) -> dict[str, Any]:
        step: dict[str, Any] = {"timestamp": line.ts, "source": source, "message": message}
        self.steps.append(step)
        return step

    def _response(self, line: AgentLine, price: Price) -> None:
        step = self._step(line, "agent", line.text)
        if line.reasoning:
            step["reasoning_content"] = line.reasoning
        if line.stop_reason:
            step["extra"] = {"stop_reason": line.stop_reason}
        usage = line.usage
        prompt, cached, completion = (
            usage.prompt_tokens or 0,
            usage.cached_tokens or 0,
            usage.completion_tokens or 0,
        )
        cache_write = int((usage.extra or {}).get("cache_write_tokens") or 0)
        step["metrics"] = Metrics(
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            cost_usd=cost_usd(price, prompt, cached, completion, cache_write),
            extra=usage.extra,
        )
        if not line.tool_calls:
            return
        step["tool_calls"] = list(line.tool_calls)
        step["observation"] = {"results": []}
        for call in line.tool_calls:
            key = (line.session_id, call.tool_call_id)
            if key in self.open_calls:  # the same id again before a result: that one never came
                self._answer(key, NO_RESULT)
                self.unanswered += 1
            self.open_calls[key] = step

    def _result(self, line: ToolResultLine) -> None:
        key = (line.session_id, line.call_id)
        if key not in self.open_calls:
            self.notes.append(f"tool result {line.call_id} answers no open tool call: skipped")
            return
        self._answer(key, line.content)

    def _answer(self, key: tuple[str, str], content: str) -> None:
        step = self.open_calls.pop(key)
        step["observation"]["results"].append({"source_call_id": key[1], "content": content})

    def finish(self) -> None:
        """Calls that never got a result get the NO_RESULT one; results in call order."""
        for key in list(self.open_calls):
            self._answer(key, NO_RESULT)
            self.unanswered += 1
        if self.unanswered:
            self.notes.append(f"{self.unanswered} tool call(s) without a result, marked as such")
        for step in self.steps:
            if "tool_calls" in step:
                order = {call.tool_call_id: i for i, call in enumerate(step["tool_calls"])}
                step["observation"]["results"].sort(key=lambda r: order[r["source_call_id"]])


def assemble(
    lines: Iterable[SideLine], *, session_id: str, price: Price, fallback: AgentInfo
) -> tuple[Trajectory | None, list[str]]:
    """The validated trajectory (None without any step) and notes on what was left out.

    Raises `pydantic.ValidationError` when the lines make no valid document."""
    assembly = _Assembly()
    for line in lines:
        assembly.add(line, price)
    assembly.finish()
    if not assembly.steps:
        return None, [*assembly.notes, "no steps recorded"]
    steps = [
        Step.model_validate({"step_id": number, **step})
        for number, step in enumerate(assembly.steps, start=1)
    ]
    trajectory = Trajectory(
        session_id=session_id,
        agent=assembly.agent or fallback,
        steps=steps,
        final_metrics=final_metrics(steps),
    )
    return trajectory, assembly.notes


def write_trajectories(
    paths: TrialPaths, trial_id: str, agents: Iterable[AgentTrajectorySource]
) -> tuple[dict[str, str], list[str]]:
    """Assemble and write each agent's trajectory that has a side file: (agent id -> path
    relative to the trial directory, for `result.json`; lines for trial.log)."""
    written: dict[str, str] = {}
    log: list[str] = []
    for agent in agents:
        side_path = paths.trajectory_log(agent.agent_id)
        if not side_path.is_file():
            continue
        try:
            side = read_side_file(side_path)
            trajectory, notes = assemble(
                side.lines,
                session_id=f"{trial_id}:{agent.agent_id}",
                price=agent.price,
                fallback=agent.fallback,
            )
        except (OSError, ValueError) as error:  # unreadable file; lines that make no document
            log.append(f"{side_path.name}: trajectory not written: {_one_line(error)}")
            continue
        log += [f"{side_path.name}: {note}" for note in [*side.notes, *notes]]
        if trajectory is None:
            continue
        target = paths.trajectory(agent.agent_id)
        write_json_atomic(target, trajectory.to_document())
        written[agent.agent_id] = target.relative_to(paths.root).as_posix()
    return written, log


def trajectory_sources(
    slots: Iterable[AgentSlot], prices: Mapping[str, Price]
) -> list[AgentTrajectorySource]:
    """One source per roster agent. The fallback identity is used only when no system step
    survived (every session starts with one): the version is then unknown."""
    return [
        AgentTrajectorySource(
            agent_id=slot.agent_id,
            price=prices[slot.entry.endpoint],
            # BUZZ_AGENT_MODEL is the endpoint name (§4.2)
            fallback=AgentInfo(
                name="buzz-agent", version="unknown", model_name=slot.entry.endpoint
            ),
        )
        for slot in slots
    ]


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
