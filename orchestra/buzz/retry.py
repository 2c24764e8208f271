"""The orchestrator's retry policy for library operations (orchestrator.md §7.3)."""

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

from orchestra.backoff import Backoff
from orchestra.buzz.errors import BuzzError

T = TypeVar("T")
_RETRY_HINT_RE = re.compile(r"retry in (\d+(?:\.\d+)?) ?s", re.IGNORECASE)
MAX_DELAY_SECONDS = 32.0
#: Before attempt k ≥ 2 (retry k − 1): min(2^(k−2), 32) s, × a uniform factor in [1, 1.5].
SCHEDULE = Backoff(first=1.0, factor=2.0, cap=MAX_DELAY_SECONDS, jitter=(1.0, 1.5))


def should_retry(error: BuzzError) -> bool:
    return error.retryable or "rate-limited" in error.message


def delay_before(attempt: int, error: BuzzError, jitter: float | None = None) -> float:
    """Wait before attempt `attempt` (≥ 2): min(2^(k−2), 32) s, raised to a `retry in N s` hint,
    times `jitter` (a random factor in [1, 1.5] when None)."""
    hint = _RETRY_HINT_RE.search(error.message)
    return SCHEDULE.delay(
        attempt - 1, raise_to=float(hint.group(1)) if hint else None, spread=jitter
    )


async def with_retries(
    operation: Callable[[], Awaitable[T]],
    *,
    attempts: int = 7,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    jitter: Callable[[], float] | None = None,
) -> T:
    """Await `operation()`, retrying retryable `BuzzError`s up to `attempts` times in total."""
    for attempt in range(1, attempts + 1):
        try:
            return await operation()
        except BuzzError as error:
            if attempt == attempts or not should_retry(error):
                raise
            await sleep(delay_before(attempt + 1, error, jitter() if jitter else None))
    raise AssertionError("unreachable")
