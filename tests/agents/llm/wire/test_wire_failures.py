"""Failure classes from the providers' real error answers (failures.py names the shapes), and
what the agent does with them: no retry where none can help, a context that cannot be trimmed
ends the turn as `context_exhausted` instead of failing it."""

from __future__ import annotations

import httpx
import pytest
from acp import RequestError
from fake_llm import Reply, chat_text

from orchestra.agents.llm.client import http_error
from orchestra.agents.llm.failures import POLICIES, FailureClass

ANTHROPIC_CREDIT = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "Your credit balance is too low to access the Anthropic API. Please go to "
        "Plans & Billing to upgrade or purchase credits.",
    },
}


def anthropic_error(kind: str, message: str = "x") -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_error(message: str, kind: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


CASES = [
    (400, ANTHROPIC_CREDIT, FailureClass.BILLING),
    (402, anthropic_error("billing_error"), FailureClass.BILLING),
    (401, anthropic_error("authentication_error", "invalid x-api-key"), FailureClass.AUTH),
    (403, anthropic_error("permission_error"), FailureClass.AUTH),
    (429, anthropic_error("rate_limit_error"), FailureClass.RATE_LIMIT),
    (529, anthropic_error("overloaded_error", "Overloaded"), FailureClass.OVERLOAD),
    (500, anthropic_error("api_error", "Internal server error"), FailureClass.SERVER_ERROR),
    (
        400,
        anthropic_error("invalid_request_error", "prompt is too long: 208310 tokens > 200000"),
        FailureClass.CONTEXT_OVERFLOW,
    ),
    (
        400,
        anthropic_error("invalid_request_error", "messages.1.content.0.type: Field required"),
        FailureClass.BAD_REQUEST,
    ),
    (
        429,
        openai_error(
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            "insufficient_quota",
        ),
        FailureClass.BILLING,
    ),
    (
        429,
        openai_error("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
        FailureClass.RATE_LIMIT,
    ),
    (
        400,
        openai_error(
            "This model's maximum context length is 128000 tokens.",
            "invalid_request_error",
            "context_length_exceeded",
        ),
        FailureClass.CONTEXT_OVERFLOW,
    ),
    (
        400,
        openai_error(
            "Your request was rejected by the safety system.",
            "invalid_request_error",
            "content_policy_violation",
        ),
        FailureClass.CONTENT_REFUSAL,
    ),
    (
        401,
        openai_error("Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
        FailureClass.AUTH,
    ),
    (
        400,
        openai_error("Unknown parameter: 'input[1].bogus'.", "invalid_request_error", None),
        FailureClass.BAD_REQUEST,
    ),
    (402, {"error": {"code": 402, "message": "Insufficient credits"}}, FailureClass.BILLING),
    (503, "upstream connect error", FailureClass.SERVER_ERROR),
]


@pytest.mark.parametrize(("status", "body", "expected"), CASES)
def test_error_answers_are_classed_as_the_provider_means_them(status, body, expected) -> None:
    response = (
        httpx.Response(status, text=body)
        if isinstance(body, str)
        else httpx.Response(status, json=body)
    )
    error = http_error(response)
    assert error.failure_class is expected
    assert error.retryable is POLICIES[expected].retryable


def test_only_the_models_doing_is_scored_and_only_key_or_credit_stops_the_run() -> None:
    scored = {c for c, p in POLICIES.items() if p.scored}
    stopping = {c for c, p in POLICIES.items() if p.stops_run}
    assert scored == {
        FailureClass.CONTEXT_OVERFLOW,
        FailureClass.CONTENT_REFUSAL,
        FailureClass.INVALID_OUTPUT,
    }
    assert stopping == {FailureClass.AUTH, FailureClass.BILLING}


async def test_an_empty_balance_fails_at_once_as_billing(fake_llm, start_agent) -> None:
    fake_llm.script(Reply(status=400, body=ANTHROPIC_CREDIT))
    async with start_agent(fake_llm.anthropic_env()) as agent:
        session = await agent.new_session(tools=False)
        with pytest.raises(RequestError) as failure:
            await agent.prompt(session, "hi")
    assert failure.value.data["class"] == "billing"
    assert failure.value.data["retryable"] is False
    assert len(fake_llm.requests) == 1


async def test_an_overflow_that_trimming_cannot_fix_ends_the_turn_context_exhausted(
    fake_llm, start_agent
) -> None:
    overflow = Reply(
        status=400,
        body=openai_error(
            "maximum context length", "invalid_request_error", "context_length_exceeded"
        ),
    )
    fake_llm.script(overflow)
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False)
        response = await agent.prompt(session, "only prompt")  # nothing to trim: no retry
    assert response.stop_reason == "max_tokens"
    assert response.field_meta["buzz"]["stopDetail"] == "context_exhausted"
    assert len(fake_llm.requests) == 1


async def test_an_overflow_is_retried_once_only_after_trimming_changed_the_prompt(
    fake_llm, start_agent
) -> None:
    overflow = Reply(
        status=400, body=openai_error("maximum context length", "x", "context_length_exceeded")
    )
    fake_llm.script(chat_text("first answer"), overflow, overflow)
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False)
        await agent.prompt(session, "one " * 2000)
        response = await agent.prompt(session, "two")
    assert response.field_meta["buzz"]["stopDetail"] == "context_exhausted"
    retried, trimmed = fake_llm.requests[1].body, fake_llm.requests[2].body
    assert retried != trimmed and len(trimmed["messages"]) < len(retried["messages"])


LLAMA_CPP_INVALID = Reply(
    status=500,
    body={
        "error": {
            "code": 500,
            "message": "The model produced output that does not match the expected peg-native "
            "format",
            "type": "server_error",
        }
    },
)


@pytest.mark.parametrize(
    "message",
    [
        "The model produced output that does not match the expected peg-native format",
        "error parsing tool call: raw='{\"command\":', err=unexpected end of JSON input",
    ],
)
def test_a_server_that_cannot_parse_the_models_output_is_the_models_invalid_output(
    message: str,
) -> None:
    response = httpx.Response(500, json={"error": {"message": message, "type": "server_error"}})
    error = http_error(response)
    assert error.failure_class is FailureClass.INVALID_OUTPUT
    assert POLICIES[error.failure_class].scored and not error.retryable


def test_a_500_without_that_cause_stays_a_server_error() -> None:
    response = httpx.Response(500, json={"error": {"message": "Internal server error"}})
    assert http_error(response).failure_class is FailureClass.SERVER_ERROR


async def test_invalid_output_is_asked_again_twice_then_ends_the_turn_invalid_output(
    fake_llm, start_agent
) -> None:
    fake_llm.script(LLAMA_CPP_INVALID, LLAMA_CPP_INVALID, LLAMA_CPP_INVALID, chat_text("never"))
    env = fake_llm.openai_env() | {"BUZZ_AGENT_RETRY_BUDGET": "0"}
    async with start_agent(env) as agent:
        session = await agent.new_session(tools=False)
        response = await agent.prompt(session, "do it")
    assert response.stop_reason == "end_turn"
    assert response.field_meta["buzz"]["stopDetail"] == "invalid_output"
    # three calls although the provider retry budget is 0: the notes are not provider retries
    assert len(fake_llm.requests) == 3
    notes = [request.body["messages"][-1]["content"] for request in fake_llm.requests[1:]]
    assert all("could not parse your previous reply" in note for note in notes)


async def test_a_parsed_reply_after_a_corrective_note_carries_on(fake_llm, start_agent) -> None:
    fake_llm.script(LLAMA_CPP_INVALID, chat_text("fixed"))
    async with start_agent(fake_llm.openai_env()) as agent:
        session = await agent.new_session(tools=False)
        response = await agent.prompt(session, "do it")
    assert response.stop_reason == "end_turn"
    assert "stopDetail" not in response.field_meta["buzz"]
    assert len(fake_llm.requests) == 2
