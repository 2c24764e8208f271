"""The live endpoint check of preflight (orchestrator.md §2.4).

One minimal authenticated request per endpoint the roster uses — the cheapest call each
provider offers, with the configured model, base URL and key, built and sent by `buzz-agent`'s
own LLM client so that what is checked is what agents will send — all endpoints at once, each
within `PROBE_SECONDS`. The oracle needs none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from orchestra.agents.llm.client import LLMClient, request_url
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.types import Conversation, Route, UserMessage
from orchestra.config.condition import Condition
from orchestra.config.endpoints import Endpoint
from orchestra.settings import SettingError
from orchestra.trial.launch import provider_settings

PROBE_SECONDS = 20.0
#: The fewest output tokens each route accepts (the Responses API refuses fewer than 16).
PROBE_OUTPUT_TOKENS: Mapping[Route, int] = {"chat": 1, "anthropic": 1, "responses": 16}
PROBE_SYSTEM = "Answer with one word."
PROBE_PROMPT = "ping"


@dataclass(frozen=True)
class ProbeResult:
    endpoint: str
    url: str  # where the probe was posted, without credentials
    problem: str | None  # None: the endpoint answered

    def line(self) -> str:
        return f"endpoint {self.endpoint} ({self.url}): {self.problem}"


def shown_url(url: str) -> str:
    """`url` without any user:password part."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


async def probe_endpoint(
    name: str, endpoint: Endpoint, api_key: str | None, seconds: float = PROBE_SECONDS
) -> ProbeResult:
    if not api_key and endpoint.api_key_env is not None:
        return ProbeResult(name, endpoint.base_url or "-", f"{endpoint.api_key_env} is not set")
    try:
        settings = provider_settings(name, endpoint, api_key)
    except SettingError as error:
        return ProbeResult(name, endpoint.base_url or "-", str(error))
    url = shown_url(request_url(settings))
    client = LLMClient(settings, effort=None, timeout_secs=seconds, max_retries=0)
    conversation = Conversation(
        model=settings.model,
        system=PROBE_SYSTEM,
        history=[UserMessage(PROBE_PROMPT)],
        tools=[],
        max_output_tokens=PROBE_OUTPUT_TOKENS[settings.route],
        effort=None,
    )
    try:
        async with asyncio.timeout(seconds):
            await client.complete(conversation, 0)
    except TimeoutError:
        return ProbeResult(name, url, f"no answer within {seconds:g} s")
    except LLMError as error:
        cause = f"HTTP {error.status}" if error.status is not None else error.kind
        detail = error.detail.replace(api_key, "[REDACTED]") if api_key else error.detail
        return ProbeResult(name, url, f"{cause}: {detail}")
    finally:
        await client.aclose()
    return ProbeResult(name, url, None)


async def probe_endpoints(
    condition: Condition, api_keys: Mapping[str, str], seconds: float = PROBE_SECONDS
) -> list[ProbeResult]:
    """Every non-oracle endpoint the roster uses, probed concurrently, in name order."""
    endpoints = sorted(
        (name, endpoint)
        for name, endpoint in condition.used_endpoints().items()
        if not endpoint.is_oracle
    )
    return list(
        await asyncio.gather(
            *(
                probe_endpoint(name, ep, api_keys.get(ep.api_key_env or ""), seconds)
                for name, ep in endpoints
            )
        )
    )
