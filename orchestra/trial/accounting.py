"""Token and cost accounting from the ACP event logs (orchestrator.md §7.13, §7.14)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from orchestra.documents.enums import Accounting
from orchestra.documents.trial import AgentTokens, TrialTokens
from orchestra.trial.eventlog import AgentLogState


class Price(Protocol):
    input_per_million_usd: float
    cached_input_per_million_usd: float
    output_per_million_usd: float
    cache_read_rate: float


@dataclass(frozen=True)
class AgentUsage:
    input: int
    cached_input: int
    output: int
    turns: int
    cost_usd: float
    cached_estimated: bool
    reported: bool


def cost_usd(price: Price, input_tokens: int, cached: int, output: int) -> float:
    """§7.14: `input_tokens` includes the `cached` ones; reasoning is inside `output`."""
    return (
        (input_tokens - cached) * price.input_per_million_usd
        + cached * price.cached_input_per_million_usd
        + output * price.output_per_million_usd
    ) / 1_000_000


def agent_usage(state: AgentLogState, price: Price) -> AgentUsage:
    input_tokens, cached, output, cached_reported = state.usage_totals()
    estimated = False
    if not cached_reported and price.cache_read_rate > 0 and input_tokens:
        cached = round(input_tokens * price.cache_read_rate)
        estimated = True
    return AgentUsage(
        input=input_tokens,
        cached_input=cached,
        output=output,
        turns=state.turns_completed,
        cost_usd=cost_usd(price, input_tokens, cached, output),
        cached_estimated=estimated,
        reported=bool(state.sessions),
    )


@dataclass(frozen=True)
class TrialAccounting:
    """The result.json keys `tokens`, `cost_usd`, `accounting` and `cached_estimated`."""

    tokens: TrialTokens | None
    cost_usd: float | None
    accounting: Accounting
    cached_estimated: bool


#: No agent reported usage (or none ran).
NO_ACCOUNTING = TrialAccounting(None, None, Accounting.UNAVAILABLE, False)


def trial_accounting(
    states: Mapping[str, AgentLogState], prices: Mapping[str, Price]
) -> TrialAccounting:
    """`prices` maps agent id -> the price of that agent's endpoint."""
    usages = {agent_id: agent_usage(state, prices[agent_id]) for agent_id, state in states.items()}
    if not any(usage.reported for usage in usages.values()):
        return NO_ACCOUNTING
    unreconciled = any(
        states[agent_id].ran_turns and not usage.reported for agent_id, usage in usages.items()
    )
    tokens = TrialTokens(
        input=sum(u.input for u in usages.values()),
        cached_input=sum(u.cached_input for u in usages.values()),
        output=sum(u.output for u in usages.values()),
        per_agent={
            agent_id: AgentTokens(
                input=usage.input,
                cached_input=usage.cached_input,
                output=usage.output,
                turns=usage.turns,
                cost_usd=usage.cost_usd,
            )
            for agent_id, usage in usages.items()
        },
    )
    return TrialAccounting(
        tokens=tokens,
        cost_usd=sum(u.cost_usd for u in usages.values()),
        accounting=Accounting.UNRECONCILED if unreconciled else Accounting.EVENT_LOG,
        cached_estimated=any(u.cached_estimated for u in usages.values()),
    )
