"""The circuit breaker, the cost cap and the retry rule (docs/decisions.md D57), on trial
results."""

from __future__ import annotations

from typing import Any

import pytest
from documents_support import STARTED, trial_result

from orchestra.agents.acp.records import TurnFailed
from orchestra.agents.llm.errors import LLMError
from orchestra.documents.run_config import RunConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.controls import RunState
from orchestra.jobs.retries import retried, will_rerun
from orchestra.trial.provider import is_provider_failure


def finished(attempt: int, status: str = "scored", error: str | None = None, cost: float = 0.0
             ) -> TrialResult:  # fmt: skip
    fields: dict[str, Any] = {"status": status, "cost_usd": cost}
    if error is not None:
        fields["exception_info"] = {
            "exception_type": error,
            "exception_message": f"{error} happened\nmore",
            "exception_traceback": "",
            "occurred_at": STARTED,
            "phase": "agent",
        }
    return trial_result("buzz-native/user-mention", attempt, **fields)


def test_the_breaker_trips_once_on_provider_errors_in_a_row() -> None:
    controls = RunState.of(RunConfig(provider_error_limit=3))
    sequence = [
        finished(1, "error", "ProviderUnavailable"),
        finished(2, "error", "ProviderUnavailable"),
        finished(3),  # a score resets the count
        finished(4, "error", "ProviderUnavailable"),
        finished(5, "cancelled", "Cancelled"),  # does not count either way
        finished(6, "error", "ProviderUnavailable"),
    ]
    assert [controls.trial_finished(r) for r in sequence] == [None] * 6
    stop = controls.trial_finished(finished(7, "error", "ProviderUnavailable"))
    assert stop is not None and stop.reason == "circuit_breaker"
    assert stop.message.startswith("3 trials in a row ended in provider errors (")
    assert stop.message.endswith("last: ProviderUnavailable: ProviderUnavailable happened")
    assert controls.trial_finished(finished(8, "error", "ProviderUnavailable")) is None
    assert controls.stop is stop


@pytest.mark.parametrize("error", ["ProviderAuthFailed", "ProviderBillingFailed"])
def test_a_refused_key_or_an_empty_balance_stops_the_run_at_once(error: str) -> None:
    controls = RunState.of(RunConfig(provider_error_limit=3))
    stop = controls.trial_finished(finished(1, "error", error))
    assert stop is not None and stop.reason == "circuit_breaker"
    assert stop.message.endswith(f"which no retry or later trial can fix: {error} happened")


def test_other_errors_reset_the_breaker_and_zero_disables_it() -> None:
    controls = RunState.of(RunConfig(provider_error_limit=2))
    for attempt, error in enumerate(["ProviderUnavailable", "StackUnavailable"], start=1):
        controls.trial_finished(finished(attempt, "error", error))
    assert controls.trial_finished(finished(3, "error", "ProviderUnavailable")) is None
    disabled = RunState.of(RunConfig(provider_error_limit=0))
    results = [finished(n, "error", "ProviderUnavailable") for n in range(1, 10)]
    assert all(disabled.trial_finished(r) is None for r in results)


def test_the_cost_cap_counts_finished_and_live_cost_once() -> None:
    controls = RunState.of(RunConfig(max_cost_usd=1.0))
    assert controls.trial_finished(finished(1, cost=0.4)) is None
    assert controls.trial_finished(finished(1, cost=0.4)) is None  # the same trial again
    assert controls.live_cost("user-mention__2", 0.3) is None
    assert controls.live_cost("user-mention__2", 0.5) is None  # replaces, not adds: 0.9
    stop = controls.live_cost("user-mention__3", 0.1)
    assert stop is not None and stop.reason == "cost_cap"
    assert stop.spent_usd == pytest.approx(1.0)
    assert controls.trial_finished(finished(2, cost=0.6)) is None  # stopped already
    assert controls.cost_cap.spent_usd == pytest.approx(1.1)  # 0.4 + 0.6 + 0.1 in flight
    assert RunState.of(RunConfig()).live_cost("x", 1e9) is None  # no cap


@pytest.mark.parametrize(
    ("status", "error", "rerun"),
    [
        ("error", "ProviderUnavailable", True),
        ("error", "StackUnavailable", True),
        ("error", "EvidenceExportError", True),
        ("error", "ProviderAuthFailed", False),
        ("error", "RewardFileNotFound", False),
        ("error", "InternalError", False),
        ("error", "AgentProcessExited", False),
        ("cancelled", "Cancelled", False),
        ("scored", None, False),
    ],
)
def test_only_harness_errors_are_rerun(status: str, error: str | None, rerun: bool) -> None:
    assert retried(finished(1, status, error)) is rerun


def test_a_provider_failure_the_agent_retried_to_its_budget_is_not_rerun() -> None:
    """The agent's retry budget already retried it; a rerun would spend another
    budget on the same dead provider."""
    error = LLMError("llm_http_error", "HTTP 500: upstream down", status=500)
    error.exhaust_budget("4/4")
    spent = finished(1, "error", "ProviderUnavailable")
    assert spent.exception_info is not None
    spent.exception_info.exception_message = (
        f"endpoint e at http://127.0.0.1:9/v1: HTTP 500: agent solo gave up a turn: {error.detail}"
    )
    assert not retried(spent)
    assert not will_rerun(spent, retries=1, stopped=False)
    other = finished(1, "error", "ProviderUnavailable")  # e.g. the network dropped mid-turn
    assert will_rerun(other, retries=1, stopped=False)
    assert not will_rerun(other, retries=1, stopped=True)
    assert not will_rerun(other, retries=0, stopped=False)


@pytest.mark.parametrize(
    ("kind", "status", "provider"),
    [
        ("llm_network_error", None, True),
        ("llm_bad_response", None, True),
        ("llm_http_error", 401, True),
        ("llm_http_error", 403, True),
        ("llm_http_error", 408, True),
        ("llm_http_error", 429, True),
        ("llm_http_error", 500, True),
        ("llm_http_error", 529, True),
        ("llm_http_error", 400, False),  # the agent's request (e.g. context length)
        ("llm_http_error", 404, False),
        ("llm_http_error", 422, False),
        ("mcp_error", None, False),
        ("internal", None, False),
        (None, None, False),  # an agent exit, an unanswered cancel
    ],
)
def test_which_given_up_turns_are_the_providers(
    kind: str | None, status: int | None, provider: bool
) -> None:
    record = TurnFailed(will_retry=False, error_kind=kind, http_status=status, error="x")
    assert is_provider_failure(record) is provider


@pytest.mark.parametrize(
    ("failure_class", "status", "provider"),
    [
        ("billing", 400, True),  # Anthropic's "credit balance is too low" is a 400
        ("bad_request", 400, True),  # a request the harness built: an error, never a score
        ("auth", 403, True),
        ("rate_limit", 429, True),
        ("context_overflow", 400, False),  # the model's own conversation: scored
        ("content_refusal", 400, False),
        ("something_new", 500, True),  # an unknown class falls back to the status
    ],
)
def test_the_agents_failure_class_decides_over_the_status(
    failure_class: str, status: int, provider: bool
) -> None:
    record = TurnFailed(
        will_retry=False,
        error_kind="llm_http_error",
        http_status=status,
        failure_class=failure_class,
        error="x",
    )
    assert is_provider_failure(record) is provider
