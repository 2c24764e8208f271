"""Budget checks on every usage record (orchestrator.md §7.13)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from orchestra.config.manifest import AgentSlot, Manifest
from orchestra.documents.enums import BudgetScope
from orchestra.documents.trial import BudgetExceeded
from orchestra.trial.accounting import agent_usage
from orchestra.trial.eventlog import AgentLogState

AgentLimit = Literal["max_input_tokens", "max_output_tokens", "max_cost_usd"]
AGENT_LIMITS: tuple[AgentLimit, ...] = ("max_input_tokens", "max_output_tokens", "max_cost_usd")


def trial_cost(
    manifest: Manifest, slots: Sequence[AgentSlot], states: Mapping[str, AgentLogState]
) -> float:
    """The trial's cost so far, from its agents' usage (§7.14)."""
    return sum(
        agent_usage(states[slot.agent_id], manifest.prices[slot.entry.endpoint]).cost_usd
        for slot in slots
        if slot.agent_id in states
    )


def budget_exceeded(
    manifest: Manifest, slots: Sequence[AgentSlot], states: Mapping[str, AgentLogState]
) -> BudgetExceeded | None:
    """The first exceeded limit, or None."""
    total = 0.0
    for slot in slots:
        state = states.get(slot.agent_id)
        if state is None:
            continue
        usage = agent_usage(state, manifest.prices[slot.entry.endpoint])
        total += usage.cost_usd
        observed: dict[AgentLimit, int | float] = {
            "max_input_tokens": usage.input,
            "max_output_tokens": usage.output,
            "max_cost_usd": usage.cost_usd,
        }
        for limit in AGENT_LIMITS:
            maximum = getattr(slot.entry.budget, limit)
            if maximum is not None and observed[limit] > maximum:
                return BudgetExceeded(
                    scope=BudgetScope.AGENT,
                    agent_id=slot.agent_id,
                    limit=limit,
                    max=maximum,
                    value=observed[limit],
                )
    trial_max = manifest.trial_budget.max_cost_usd
    if trial_max is not None and total > trial_max:
        return BudgetExceeded(
            scope=BudgetScope.TRIAL,
            agent_id=None,
            limit="max_cost_usd",
            max=trial_max,
            value=total,
        )
    return None
