"""The orchestrator's retry policy for library operations (orchestrator.md §7.3)."""

import asyncio
import random
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

from orchestra.buzz.errors import BuzzError

T = TypeVar("T")
_RETRY_HINT_RE = re.compile(r"retry in (\d+(?:\.\d+)?) ?s", re.IGNORECASE)
MAX_DELAY_SECONDS = 32.0


def should_retry(error: BuzzError) -> bool:
    return error.retryable or "rate-limited" in error.message


def delay_before(attempt: int, error: BuzzError, jitter: float) -> float:
    """Wait before attempt `attempt` (≥ 2): min(2^(k−2), 32) s, raised to a `retry in N s` hint."""
    delay = min(2.0 ** (attempt - 2), MAX_DELAY_SECONDS)
    hint = _RETRY_HINT_RE.search(error.message)
    if hint:
        delay = max(delay, float(hint.group(1)))
    return delay * jitter


async def with_retries(
    operation: Callable[[], Awaitable[T]],
    *,
    attempts: int = 7,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    jitter: Callable[[], float] = lambda: random.uniform(1.0, 1.5),
) -> T:
    """Await `operation()`, retrying retryable `BuzzError`s up to `attempts` times in total."""
    for attempt in range(1, attempts + 1):
        try:
            return await operation()
        except BuzzError as error:
            if attempt == attempts or not should_retry(error):
                raise
            await sleep(delay_before(attempt + 1, error, jitter()))
    raise AssertionError("unreachable")
