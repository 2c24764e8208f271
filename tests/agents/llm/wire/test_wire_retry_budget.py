"""One retry budget per buzz-agent process (orchestra/agents/llm/budget.py): an always-failing
provider makes the turn fail, not retryable, after the budget's retries, so buzz-acp does not
retry the turn and the trial ends in seconds."""

from __future__ import annotations

import pytest
from acp import RequestError
from fake_llm import chat_text, error_reply

from orchestra.agents.llm.budget import RetryBudget, budget_used_up


async def test_an_always_failing_provider_uses_up_the_budget_once(fake_llm, start_agent) -> None:
    fake_llm.script(*[error_reply(500)] * 10)
    env = fake_llm.openai_env() | {"BUZZ_AGENT_RETRY_BUDGET": "2"}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        with pytest.raises(RequestError) as failure:
            await agent.prompt(session, "hi")
        stderr = agent.stderr_text()
    assert len(fake_llm.requests) == 3  # the first attempt and two retries
    assert failure.value.data["retryable"] is False
    assert failure.value.data["class"] == "server_error"
    assert "retry budget 2/2 used up" in failure.value.data["detail"]
    assert budget_used_up(failure.value.data["detail"])  # so the trial is not rerun (jobs/)
    assert "(retry budget 1/2)" in stderr and "(retry budget 2/2)" in stderr
    # Each retry is told to the ACP client as it starts (buzz-acp logs it for the progress).
    retries = [p for m, p in agent.client.extensions if m == "buzz/llm_retry"]
    assert [(p["httpStatus"], p["retriesUsed"], p["retryBudget"]) for p in retries] == [
        (500, 1, 2),
        (500, 2, 2),
    ]
    assert {p["sessionId"] for p in retries} == {session}


def test_the_budget_counts_retries_in_a_row_and_caps_their_wall_clock() -> None:
    budget = RetryBudget(retries=2, secs=10)
    assert budget.take(1.0) and budget.take(1.0) and not budget.take(1.0)
    budget.succeeded()  # a provider that recovers starts afresh
    assert budget.spent() == "0/2" and budget.take(1.0)
    assert not RetryBudget(retries=5, secs=10).take(11.0)  # would start after the cap


async def test_a_recovered_provider_is_not_held_to_earlier_failures(fake_llm, start_agent) -> None:
    fake_llm.script(error_reply(500), chat_text("one"), error_reply(500), chat_text("two"))
    env = fake_llm.openai_env() | {"BUZZ_AGENT_RETRY_BUDGET": "1"}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        first = await agent.prompt(session, "a")
        second = await agent.prompt(session, "b")
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert len(fake_llm.requests) == 4
