"""The agents' trajectories (`agent/buzz/<agent id>.trajectory.json`, ATIF, orchestrator.md
§7.16) in report.html, beside the channel transcript.

Each step is a `<details>` element, collapsible without a script (the page allows none): its
summary says who spoke, when, and what (the first line, or the tools called); inside are the
message, the reasoning, each tool call with its arguments and its result in `<pre>`. Every
string came from a model, a tool or a prompt: each one goes through `escape`. A text longer
than `SHOWN_CHARS` is cut in the page, never in the file, which the heading links to.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestra.agents.trajectory.atif import Step, Trajectory
from orchestra.config.errors import from_validation_error
from orchestra.documents.report import ReportTrial

SHOWN_CHARS = 8000
GIST_CHARS = 100

TRAJECTORY_STYLE = """
@media (min-width: 1400px) {
  .trial-body.with-trajectories { grid-template-columns: minmax(0, 3fr) minmax(0, 3fr)
                                                         minmax(0, 2fr); } }
@media (min-width: 901px) and (max-width: 1399px) {
  .trial-body.with-trajectories { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }
  .trial-body.with-trajectories > .panel { grid-column: 1 / -1; } }
.trajectory { margin: 0 0 12px; }
.trajectory h4 { margin: 6px 0; font-size: 14px; }
.trajectory .totals { font-size: 12px; color: var(--muted); margin: 0 0 6px; }
details.step { border: 1px solid var(--line); border-left: 4px solid var(--muted);
               border-radius: 6px; margin: 0 0 4px; background: #fff; }
details.step.source-user { border-left-color: var(--user); }
details.step.source-agent { border-left-color: var(--orchestrator); }
details.step > summary { cursor: pointer; padding: 3px 8px; font-size: 12px;
                         display: flex; flex-wrap: wrap; gap: 2px 8px; align-items: baseline; }
details.step > summary .gist { color: #1f2328; overflow-wrap: anywhere; }
details.step > summary .meta { color: var(--muted); }
details.step > .body { padding: 2px 8px 6px; }
details.step pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px;
                   padding: 6px 8px; white-space: pre-wrap; overflow-wrap: anywhere;
                   font-size: 12px; margin: 2px 0; max-height: 320px; overflow: auto; }
details.step .label { font-size: 12px; font-weight: 600; margin-top: 4px; }
.badge.source { background: #eaeef2; color: #1f2328; }
"""


def has_trajectories(trial: ReportTrial) -> bool:
    return any(logs.trajectory for logs in trial.files.agents.values())


def render_trajectories(trial: ReportTrial, link: Callable[[str], str]) -> str:
    """Every agent's trajectory of one report trial entry; `link(path)` is the page's href."""
    parts = []
    for agent_id, logs in trial.files.agents.items():
        path = logs.trajectory
        if path is None:
            parts.append(
                f'<div class="trajectory"><h4>{escape(agent_id)}</h4>'
                '<p class="empty">No trajectory (the agent recorded no step).</p></div>'
            )
            continue
        heading = f'{escape(agent_id)} · <a href="{link(path)}">trajectory.json</a>'
        try:
            trajectory = Trajectory.model_validate_json(Path(path).read_bytes())
        except (OSError, ValidationError) as error:
            parts.append(
                f'<div class="trajectory"><h4>{heading}</h4><p class="note">Unreadable '
                f"trajectory: {escape(_problem(error))}</p></div>"
            )
            continue
        parts.append(_trajectory(heading, trajectory))
    return "\n".join(parts)


def _trajectory(heading: str, trajectory: Trajectory) -> str:
    agent, totals = trajectory.agent, trajectory.final_metrics
    cost = totals.total_cost_usd
    facts = (
        f"{escape(agent.name)} {escape(agent.version)} · model {escape(str(agent.model_name))} · "
        f"{totals.total_steps} steps · tokens {totals.total_prompt_tokens} in "
        f"({totals.total_cached_tokens} cached) / {totals.total_completion_tokens} out · "
        + ("cost —" if cost is None else f"${cost:.4f}")
    )
    steps = "".join(_step(step) for step in trajectory.steps)
    return f'<div class="trajectory"><h4>{heading}</h4><p class="totals">{facts}</p>{steps}</div>'


def _step(step: Step) -> str:
    calls = step.tool_calls or []
    observed = step.observation.results if step.observation else []
    results = {result.source_call_id: result.content for result in observed}
    gist = (
        ", ".join(
            f"{call.function_name}: {_arguments_gist(call.arguments)} → "
            f"{_last_line(results.get(call.tool_call_id, ''))}"
            for call in calls
        )
        if calls
        else _message_gist(step)
    )
    meta = [step.timestamp.replace("T", " ")[:19]]
    if step.metrics is not None:
        meta.append(f"{step.metrics.prompt_tokens} in / {step.metrics.completion_tokens} out")
    body = []
    if step.reasoning_content:
        body.append(_block("reasoning", step.reasoning_content))
    if step.message or not calls:
        body.append(_block("message", step.message))
    for call in calls:
        arguments = json.dumps(call.arguments, indent=2, ensure_ascii=False)
        body.append(_block(f"call {call.function_name} ({call.tool_call_id})", arguments))
        body.append(_block("result", results.get(call.tool_call_id, "")))
    return (
        f'<details class="step source-{step.source}"><summary>'
        f"<span>#{step.step_id}</span>"
        f'<span class="badge source">{step.source}</span>'
        f'<span class="gist">{escape(gist)}</span>'
        f'<span class="meta">{escape(" · ".join(meta))}</span>'
        f'</summary><div class="body">{"".join(body)}</div></details>'
    )


def _block(label: str, text: str) -> str:
    shown = text[:SHOWN_CHARS]
    cut = len(text) - len(shown)
    note = f"\n[… {cut} more characters in the trajectory file]" if cut else ""
    return f'<div class="label">{escape(label)}</div><pre>{escape(shown + note)}</pre>'


def _first_line(text: str) -> str:
    line = next((line for line in text.splitlines() if line.strip()), "(empty)")
    return line[:GIST_CHARS] + ("…" if len(line) > GIST_CHARS else "")


def _message_gist(step: Step) -> str:
    """A system prompt by its size; a Buzz prompt (agent-harness.md §1.6.3) by the first line of
    its first event's content; anything else by its first line."""
    if step.source == "system":
        return f"system prompt ({len(step.message)} characters)"
    _, marker, content = step.message.partition("\nContent:\n")
    return _first_line(content if marker and step.source == "user" else step.message)


def _last_line(text: str) -> str:
    """The end of a tool result: the shell's `[exit code: <n>]`, or an error's first words."""
    lines = [line for line in text.splitlines() if line.strip()]
    return _first_line(lines[-1] if lines else "")


def _arguments_gist(arguments: dict[str, Any]) -> str:
    command = arguments.get("command")
    text = command if isinstance(command, str) else json.dumps(arguments, ensure_ascii=False)
    return _first_line(text)


def _problem(error: OSError | ValidationError) -> str:
    """The first problem, `<field>: <problem>` (the heading links the file)."""
    if isinstance(error, ValidationError):
        first = from_validation_error("", error)[0]
        return f"{first.field}: {first.problem}"
    return str(error.strerror or error)
