"""`orchestra.backoff`: the schedules the documents fix, and how hints and jitter combine."""

from __future__ import annotations

import pytest

from orchestra.agents.acp.bridge import TURN_RETRY
from orchestra.agents.acp.pool import RESPAWN_BACKOFF
from orchestra.agents.acp.relay import CONNECT_BACKOFF, RECONNECT_BACKOFF
from orchestra.agents.llm.client import RETRY_BACKOFF
from orchestra.backoff import Backoff
from orchestra.buzz.retry import SCHEDULE


def delays(schedule: Backoff, retries: int) -> list[float]:
    return [schedule.delay(retry) for retry in range(1, retries + 1)]


def test_tables_repeat_their_last_delay_and_keep_it_as_written() -> None:
    # agent-harness.md §1.2 step 4, §1.3, §1.8.
    assert delays(CONNECT_BACKOFF, 7) == [1, 2, 4, 8, 15, 15, 15]
    assert delays(RECONNECT_BACKOFF, 8) == [1, 2, 4, 8, 15, 30, 30, 30]
    assert delays(RESPAWN_BACKOFF, 8) == [1, 2, 4, 8, 16, 30, 30, 30]
    # The JSONL `reconnect_in_s` shows the table's number, not a float made of it.
    assert type(RECONNECT_BACKOFF.delay(1)) is int
    with pytest.raises(ValueError, match="at least one delay"):
        Backoff.steps()


def test_exponential_schedules_with_a_cap() -> None:
    assert delays(TURN_RETRY, 4) == [5.0, 15.0, 45.0, 135.0]  # §1.9: 5 s × 3^(k−1)
    assert delays(Backoff(first=1.0, factor=2.0, cap=32.0), 8) == [1, 2, 4, 8, 16, 32, 32, 32]


def test_the_orchestrator_retry_raises_a_hint_before_the_jitter() -> None:
    # orchestrator.md §7.3: min(2^(k−2), 32) s before attempt k, raised to `retry in N s`,
    # times a factor in [1, 1.5].
    assert [SCHEDULE.delay(k - 1, spread=1.0) for k in range(2, 9)] == [1, 2, 4, 8, 16, 32, 32]
    assert SCHEDULE.delay(1, raise_to=9.0, spread=1.5) == 13.5
    assert SCHEDULE.delay(6, raise_to=9.0, spread=1.0) == 32.0  # the hint only raises
    for _ in range(200):
        assert 4.0 <= SCHEDULE.delay(3) <= 6.0


def test_the_llm_retry_floors_at_retry_after_after_the_jitter() -> None:
    # agent-harness.md §2.8: min(30, 2^(k−1)) × uniform(0.75, 1.25), at least Retry-After,
    # at most 120 s.
    for retry in range(1, 10):
        bound = min(30.0, 2.0 ** (retry - 1))
        for _ in range(50):
            assert 0.75 * bound <= RETRY_BACKOFF.delay(retry) <= 1.25 * bound
    assert RETRY_BACKOFF.delay(1, at_least=7.0) == 7.0
    assert RETRY_BACKOFF.delay(1, at_least=500.0) == 120.0
    assert RETRY_BACKOFF.delay(5, spread=1.25) == 20.0
