"""buzz-cli.md §3 error mapping and orchestrator.md §7.3 retry policy (pure)."""

import pytest

from orchestra.buzz.errors import BuzzError, from_relay_message
from orchestra.buzz.retry import delay_before, with_retries


@pytest.mark.parametrize(
    ("message", "category", "exit_code", "retryable"),
    [
        ("invalid: channel is archived", "user_error", 1, False),
        ("duplicate: a newer version of this event exists", "user_error", 1, False),
        ("auth-required: authenticate first", "auth_error", 3, False),
        ("restricted: not a channel member", "auth_error", 3, False),
        ("blocked: go away", "auth_error", 3, False),
        ("error: internal error; try again", "relay_error", 2, True),
        ("rate-limited: slow down", "relay_error", 2, True),
        ("pow: difficulty 20", "relay_error", 2, False),
        ("something odd", "relay_error", 2, False),
    ],
)
def test_relay_prefixes_map_to_categories(message, category, exit_code, retryable):
    error = from_relay_message(message)
    assert (error.error, error.exit_code, error.retryable) == (category, exit_code, retryable)
    assert error.to_json() == {"error": category, "message": message, "retryable": retryable}


def test_to_json_includes_details_only_when_present():
    error = BuzzError("conflict", "memory 'x' changed", details={"a": 1})
    assert error.exit_code == 5
    assert error.to_json()["details"] == {"a": 1}


def test_delays_double_up_to_32_seconds_and_honour_hints():
    plain = BuzzError("network_error", "lost")
    assert [delay_before(k, plain, 1.0) for k in range(2, 9)] == [1, 2, 4, 8, 16, 32, 32]
    hinted = BuzzError("relay_error", "rate-limited: retry in 9 s", retryable=True)
    assert delay_before(2, hinted, 1.5) == 13.5


async def test_with_retries_retries_retryable_errors_then_succeeds():
    calls, sleeps = [], []

    async def operation():
        calls.append(1)
        if len(calls) < 3:
            raise BuzzError("network_error", "lost")
        return "ok"

    async def fake_sleep(seconds):
        sleeps.append(seconds)

    assert await with_retries(operation, sleep=fake_sleep, jitter=lambda: 1.0) == "ok"
    assert sleeps == [1.0, 2.0]


async def test_with_retries_gives_up_after_the_attempt_budget_and_on_permanent_errors():
    calls = []

    async def failing():
        calls.append(1)
        raise BuzzError("network_error", "lost")

    async def no_sleep(_):
        return None

    with pytest.raises(BuzzError):
        await with_retries(failing, sleep=no_sleep)
    assert len(calls) == 7

    async def permanent():
        calls.append(1)
        raise BuzzError("user_error", "invalid: nope")

    calls.clear()
    with pytest.raises(BuzzError):
        await with_retries(permanent, sleep=no_sleep)
    assert len(calls) == 1
