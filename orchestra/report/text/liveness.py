"""The liveness lines of a condition's summary (orchestrator.md §10.3, §11.2): how many trials
carry each flag, and the warning for a condition none of whose trials called a tool."""

from __future__ import annotations

from orchestra.documents.summary import AgentSummary, ConditionSummary
from orchestra.plural import plural

#: The likely cause when no trial of a condition called a tool, with its fix.
NEVER_ACTED_WARNING = (
    "warning: no trial of this condition called a tool: over a suite that is most often the "
    "serving, not the model (a chat template without tool calls: llama.cpp needs `--jinja` "
    "with a tool-call template, vLLM `--enable-auto-tool-choice --tool-call-parser`); "
    "`orchestra run --check-endpoints` probes it"
)


def flags_text(flags: dict[str, int]) -> str:
    """`no-tool-call×3, looping×1`; "" when no trial carries a flag."""
    return ", ".join(f"{flag}×{count}" for flag, count in flags.items())


def seat_activity_text(agent: AgentSummary) -> str:
    """`3 requests, 12.0s`: the seat's model requests and seconds with a turn in flight; "—"
    when its trials did not record them."""
    if agent.requests is None:
        return "—"
    return f"{plural(agent.requests, 'request')}, {agent.active_seconds or 0.0:.1f}s"


def liveness_lines(condition: ConditionSummary) -> list[str]:
    """`flags: …` when any trial carries one, then the never-acted warning when it holds."""
    lines = []
    if condition.totals.flags:
        lines.append(f"flags: {flags_text(condition.totals.flags)}")
    if condition.never_acted:
        lines.append(NEVER_ACTED_WARNING)
    return lines
