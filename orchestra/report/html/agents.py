"""The agents table of report.html: per agent its role, endpoint, the messages it wrote in the
transcript and their share of what the agents wrote, tokens and cost, model requests, seconds
with a turn in flight and liveness flags (a condition's block sums
its trials, a trial's panel shows that trial)."""

from __future__ import annotations

from html import escape

from orchestra.documents.summary import AgentSummary
from orchestra.report.text.liveness import flags_text, seat_activity_text


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _flags(flags: dict[str, int]) -> str:
    return f"<br>{escape(flags_text(flags))}" if flags else ""


def agents_table(agents: dict[str, AgentSummary]) -> str:
    """`agents`: agent id -> its summary (report.json's `agents`)."""
    if not agents:
        return '<p class="empty">No agents were started.</p>'
    rows = []
    for agent_id, agent in agents.items():
        tokens = agent.tokens
        rows.append(
            f"<tr><td>{escape(agent_id)}</td><td>{escape(agent.role)}</td>"
            f"<td>{escape(agent.endpoint)}</td>"
            f'<td class="num">{agent.messages}</td>'
            f'<td class="num">{escape(_share(agent.transcript_share))}</td>'
            f'<td class="num">{tokens.input} / {tokens.cached_input} / {tokens.output}</td>'
            f'<td class="num">${agent.cost_usd:.4f}</td>'
            f"<td>{escape(seat_activity_text(agent))}{_flags(agent.flags)}</td></tr>"
        )
    return (
        '<table class="agents"><tr><th>agent</th><th>role</th><th>endpoint</th>'
        '<th class="num">messages</th><th class="num">share</th>'
        '<th class="num">tokens in / cached / out</th><th class="num">cost</th>'
        "<th>requests, time, flags</th></tr>"
        f"{''.join(rows)}</table>"
    )
