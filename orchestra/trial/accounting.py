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
    cache_write_per_million_usd: float | None


#: An unset `cache_write_per_million_usd` prices a cache write at this × the input price
#: (Anthropic's 5-minute cache; the only provider that reports cache writes).
CACHE_WRITE_PRICE_FACTOR = 1.25


@dataclass(frozen=True)
class AgentUsage:
    input: int
    cached_input: int
    cache_write_input: int
    output: int
    turns: int
    cost_usd: float
    cached_estimated: bool
    reported: bool


def cost_usd(
    price: Price, input_tokens: int, cached: int, output: int, cache_write: int = 0
) -> float:
    """§7.14: `input_tokens` includes the `cached` (read) and `cache_write` ones; reasoning is
    inside `output`."""
    write_price = price.cache_write_per_million_usd
    if write_price is None:
        write_price = price.input_per_million_usd * CACHE_WRITE_PRICE_FACTOR
    return (
        (input_tokens - cached - cache_write) * price.input_per_million_usd
        + cached * price.cached_input_per_million_usd
        + cache_write * write_price
        + output * price.output_per_million_usd
    ) / 1_000_000


def agent_usage(state: AgentLogState, price: Price) -> AgentUsage:
    input_tokens, cached, output, cached_reported = state.usage_totals()
    estimated = False
    if not cached_reported and price.cache_read_rate > 0 and input_tokens:
        cached = round(input_tokens * price.cache_read_rate)
        estimated = True
    cache_write = state.cache_write_total()
    return AgentUsage(
        input=input_tokens,
        cached_input=cached,
        cache_write_input=cache_write,
        output=output,
        turns=state.turns_completed,
        cost_usd=cost_usd(price, input_tokens, cached, output, cache_write),
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
        cache_write_input=sum(u.cache_write_input for u in usages.values()),
        output=sum(u.output for u in usages.values()),
        per_agent={
            agent_id: AgentTokens(
                input=usage.input,
                cached_input=usage.cached_input,
                cache_write_input=usage.cache_write_input,
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
