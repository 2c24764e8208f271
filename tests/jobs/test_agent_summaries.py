"""Per-agent transcript share and cost over a condition's trials (the summary shows
team trials with every agent's share and cost)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from orchestra.documents.enums import Flag
from orchestra.documents.summary import ConditionSummary, GroupSummary, Summary
from orchestra.documents.trial import TrialIdentity, TrialResult
from orchestra.jobs.aggregate import agent_summaries
from orchestra.report.text.summary import agent_lines, render_summary

EMPTY_TOTALS: dict[str, Any] = {
    "planned": 1, "scored": 0, "errors": 0, "cancelled": 0, "running": 1, "not_started": 0,
    "pass_rate": None, "pass_rate_all": 0.0, "tokens": {"input": 0, "cached_input": 0,
    "output": 0}, "cost_usd": 0.0, "mean_cost_usd": None, "mean_trial_seconds": None,
    "pass_at_k": None, "n_tasks": 0,
}  # fmt: skip
AGENTS = (("lead-1", "lead", "orchestrator", "sonnet"), ("worker-1", "worker", "worker", "haiku"))


def trial(
    name: str, messages: dict[str, int] | None, used: dict[str, tuple[int, float]]
) -> TrialResult:
    """A trial whose agents wrote `messages` (None: no evidence) and used (output, cost)."""
    identity = TrialIdentity(
        trial_id=name, trial_name=name, job_name="job", task_name="t/x", short_name="x",
        layer="regression", attempt=1, condition="team", manifest_sha256="a" * 64,
    )  # fmt: skip
    agents: list[dict[str, Any]] = [
        {"agent_id": a, "role": r, "kind": k, "endpoint": e, "pubkey": a * 4}
        | ({} if messages is None else {"messages": messages[a]})
        for a, r, k, e in AGENTS
    ]
    per_agent = {
        a: {"input": 100, "cached_input": 10, "output": out, "turns": 1, "cost_usd": cost}
        for a, (out, cost) in used.items()
    }
    tokens = {"input": 100 * len(used), "cached_input": 10 * len(used), "output": 0}
    return TrialResult.model_validate(
        {
            **identity.model_dump(),
            "started_at": "2026-12-02T05:00:00.000000Z",
            "buzz": {"agents": agents},
            "tokens": {**tokens, "per_agent": per_agent} if used else None,
        }
    )


def test_messages_shares_tokens_and_costs_are_summed_per_agent() -> None:
    trials = [
        trial("a", {"lead-1": 2, "worker-1": 2}, {"lead-1": (5, 0.5), "worker-1": (7, 0.25)}),
        trial("b", {"lead-1": 1, "worker-1": 3}, {"lead-1": (5, 0.5)}),
        trial("c", None, {}),  # an early error: no transcript, no usage
    ]
    summaries = agent_summaries(trials)
    assert list(summaries) == ["lead-1", "worker-1"]
    lead, worker = summaries["lead-1"], summaries["worker-1"]
    assert (lead.trials, lead.messages, worker.messages) == (3, 3, 5)
    assert lead.transcript_share == pytest.approx(3 / 8)
    assert worker.transcript_share == pytest.approx(5 / 8)
    assert (lead.tokens.output, lead.cost_usd) == (10, 1.0)
    assert (worker.tokens.output, worker.tokens.input, worker.cost_usd) == (7, 100, 0.25)
    assert (lead.role, lead.kind, lead.endpoint) == ("lead", "orchestrator", "sonnet")
    assert agent_summaries([trials[2]])["lead-1"].transcript_share is None


def test_the_summary_prints_one_line_per_agent_of_a_team_only() -> None:
    agents = agent_summaries([trial("a", {"lead-1": 1, "worker-1": 3}, {"lead-1": (5, 0.5)})])
    totals = EMPTY_TOTALS
    condition = ConditionSummary(
        condition="team", manifest_sha256="a" * 64, oracle=False, jobs=[], layers={},
        totals=GroupSummary.model_validate(totals), error_types={}, agents=agents,
    )  # fmt: skip
    assert agent_lines(condition) == [
        "agents (transcript share, tokens in/out, cost, requests and time, flags):",
        "  lead-1    lead    sonnet  1 msgs (25%)  0.1k/0.0k  $0.5000  —",
        "  worker-1  worker  haiku   3 msgs (75%)  0.0k/0.0k  $0.0000  —",
    ]
    console = Console(record=True, width=200)
    render_summary(Summary(conditions=[condition]), console)
    assert "  worker-1  worker  haiku   3 msgs (75%)" in console.export_text()
    solo = condition.model_copy(update={"agents": {"lead-1": agents["lead-1"]}})
    assert agent_lines(solo) == []


def test_requests_time_and_flags_are_attributed_per_seat() -> None:
    """Per-seat attribution: each seat's requests, seconds and flags summed over the trials,
    beside its tokens and cost; the lines name the seat that never acted."""
    first, second = trial("a", {"lead-1": 1, "worker-1": 0}, {}), trial("b", None, {})
    for result, worker_flags in ((first, ["no-tool-call", "text-only"]), (second, ["looping"])):
        lead, worker = result.buzz.agents
        lead.requests, lead.active_seconds = 3, 2.5
        worker.requests, worker.active_seconds = 1, 0.25
        worker.flags = [Flag(name) for name in worker_flags]
    agents = agent_summaries([first, second])
    lead, worker = agents["lead-1"], agents["worker-1"]
    assert (lead.requests, lead.active_seconds, lead.flags) == (6, 5.0, {})
    assert (worker.requests, worker.active_seconds) == (2, 0.5)
    assert worker.flags == {"no-tool-call": 1, "text-only": 1, "looping": 1}
    totals = GroupSummary.model_validate(EMPTY_TOTALS)
    condition = ConditionSummary(
        condition="team", manifest_sha256="a" * 64, oracle=False, jobs=[], layers={},
        totals=totals, error_types={}, agents=agents,
    )  # fmt: skip
    assert agent_lines(condition)[2].endswith(
        "2 requests, 0.5s  no-tool-call×1, text-only×1, looping×1"
    )
