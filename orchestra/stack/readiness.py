"""Stack readiness: `GET /_readiness` answers 200, plus `SELECT 1` when a database is known."""

from __future__ import annotations

import asyncio
import http.client
import time
import urllib.request
from collections.abc import Callable

import asyncpg

from orchestra.errors import OrchestraError

POLL_INTERVAL_SECONDS = 0.25
READINESS_TIMEOUT_SECONDS = 120.0
#: What to do when Docker is wanted and does not answer.
NO_DOCKER_WAY_OUT = "start Docker, or run without it: --stack embedded --env local"


class StackError(OrchestraError):
    """The stack could not be brought up or answered unhealthy; exit code 2."""

    exit_code = 2


async def probe_relay(http_url: str, probe_seconds: float = 2.0) -> bool:
    """`GET /_readiness` answers 200 (the standard library's client: the orchestrator has no
    other use for an HTTP client library, and importing one costs more than every probe)."""
    url = f"{http_url.rstrip('/')}/_readiness"
    return await asyncio.to_thread(_answers_200, url, probe_seconds)


def _answers_200(url: str, probe_seconds: float) -> bool:
    # No proxies: the relay is addressed directly.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=probe_seconds) as response:
            return bool(response.status == 200)
    except (OSError, ValueError, http.client.HTTPException):  # URLError/HTTPError are OSErrors
        return False


async def probe_database(database_url: str, connect_seconds: float = 5.0) -> None:
    connection = await asyncpg.connect(database_url, timeout=connect_seconds)
    try:
        await connection.fetchval("SELECT 1")
    finally:
        await connection.close()


async def wait_until_ready(
    http_url: str,
    *,
    within_seconds: float | None = None,
    gave_up: Callable[[], str | None] = lambda: None,
    describe_failure: Callable[[], str] = lambda: "",
) -> None:
    """Poll every 250 ms for up to 120 s (`within_seconds`). `gave_up` returns a reason to fail
    at once (e.g. the relay exited)."""
    within_seconds = READINESS_TIMEOUT_SECONDS if within_seconds is None else within_seconds
    deadline = time.monotonic() + within_seconds
    while True:
        if await probe_relay(http_url):
            return
        reason = gave_up()
        if reason is None and time.monotonic() >= deadline:
            reason = f"relay at {http_url} not ready after {within_seconds:g} s"
        if reason is not None:
            tail = describe_failure()
            raise StackError(f"{reason}{chr(10) + tail if tail else ''}")
        await asyncio.sleep(POLL_INTERVAL_SECONDS)
