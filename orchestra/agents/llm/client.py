"""One LLM call with retries, effort downgrade and route fallback (agent-harness.md §2.5-§2.8)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpx

from orchestra.agents.llm import anthropic, openai_chat, openai_responses
from orchestra.agents.llm.budget import RetryBudget
from orchestra.agents.llm.effort import AnthropicThinking, lower_effort
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.types import Conversation, LLMResponse, Route
from orchestra.backoff import Backoff

log = logging.getLogger("llm")

#: Told of each retry before its wait: the failure, the wait in seconds, the budget so far.
OnRetry = Callable[[LLMError, float, RetryBudget], Awaitable[None]]

CONNECT_TIMEOUT_SECS = 30.0
MAX_RETRY_WAIT_SECS = 120.0
#: §2.8: min(30, 2^(k−1)) s × uniform(0.75, 1.25), at least Retry-After, at most 120 s.
RETRY_BACKOFF = Backoff(
    first=1.0, factor=2.0, cap=30.0, jitter=(0.75, 1.25), limit=MAX_RETRY_WAIT_SECS
)
_ERROR_DETAIL_CHARS = 2000


@dataclass(frozen=True)
class ProviderSettings:
    route: Route
    base_url: str  # without trailing slash; Anthropic paths add /v1 themselves
    api_key: str = field(repr=False)
    model: str
    anthropic_version: str = "2023-06-01"
    anthropic_thinking: AnthropicThinking = "budget"
    prompt_caching: bool = True
    max_tokens_field: str = "max_completion_tokens"
    # Only api.openai.com-style servers have a Responses route to fall back to.
    may_switch_to_responses: bool = False


_ROUTE_PATHS = {
    "anthropic": anthropic.PATH,
    "responses": openai_responses.PATH,
    "chat": openai_chat.PATH,
}


def request_url(settings: ProviderSettings) -> str:
    """The URL a call on the settings' route is posted to."""
    return settings.base_url + _ROUTE_PATHS[settings.route]


def retry_delay(attempt: int, retry_after: float | None) -> float:
    """Delay before retry `attempt` (1-based): jittered exponential, at least Retry-After."""
    return RETRY_BACKOFF.delay(attempt, at_least=retry_after)


def parse_retry_after(headers: httpx.Headers) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def http_error(response: httpx.Response) -> LLMError:
    """The error answer as an LLMError: the body's `error.message` (else the body), and its
    `error.type`/`error.code` for classification (failures.py names the shapes)."""
    try:
        data = response.json()
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    error = error if isinstance(error, dict) else {}
    message = error.get("message")
    if isinstance(message, str):
        detail = message
    elif data is not None:
        detail = json.dumps(data)
    else:
        detail = response.text
    error_type, code = error.get("type"), error.get("code")
    return LLMError(
        "llm_http_error",
        detail[:_ERROR_DETAIL_CHARS],
        status=response.status_code,
        retry_after=parse_retry_after(response.headers),
        error_type=error_type if isinstance(error_type, str) else None,
        error_code=code if isinstance(code, str) else None,
    )


class LLMClient:
    def __init__(
        self,
        settings: ProviderSettings,
        *,
        effort: str | None,
        timeout_secs: float,
        max_retries: int,
        budget: RetryBudget | None = None,
    ) -> None:
        self._settings = settings
        self.effort = effort  # effective value; lowered for the process when a server rejects it
        self._max_retries = max_retries
        # Shared by every call of the process (budget.py); unlimited for one-off clients.
        self._budget = budget or RetryBudget(retries=max_retries, secs=float("inf"))
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_secs, connect=CONNECT_TIMEOUT_SECS),
            # Every request goes to base_url and redirects are not followed, so a plain-http
            # endpoint (the oracle) never uses TLS: skip loading the CA bundle (~25 ms CPU).
            verify=urlsplit(settings.base_url).scheme.lower() != "http",
        )

    @property
    def route(self) -> Route:
        return self._settings.route

    @property
    def model(self) -> str:
        return self._settings.model

    async def aclose(self) -> None:
        await self._http.aclose()

    async def complete(
        self, conv: Conversation, round_number: int, on_retry: OnRetry | None = None
    ) -> LLMResponse:
        """Retries 429/5xx/network/bad responses; raises LLMError when it gives up."""
        attempt = 0
        while True:
            try:
                response = await self._once(replace(conv, effort=self.effort), round_number)
            except LLMError as err:
                if self._adapted_to(err):
                    continue
                if not err.retryable or attempt >= self._max_retries:
                    raise
                delay = retry_delay(attempt + 1, err.retry_after)
                if not self._budget.take(delay):
                    err.exhaust_budget(self._budget.spent())
                    raise
                attempt += 1
                log.warning(
                    "llm retry %d/%d: %s; waiting %.1fs (retry budget %s)",
                    attempt,
                    self._max_retries,
                    err.describe(),
                    delay,
                    self._budget.spent(),
                )
                if on_retry is not None:
                    await on_retry(err, delay, self._budget)
                await asyncio.sleep(delay)
            else:
                self._budget.succeeded()
                return response

    def _adapted_to(self, err: LLMError) -> bool:
        """One-time, process-wide adaptations to what the server can do; True = call again."""
        if (
            err.status == 400
            and self.effort is not None
            and self.route != "anthropic"
            and err.mentions("reasoning_effort", "reasoning.effort")
        ):
            lower = lower_effort(self.effort)
            if lower is not None:
                log.warning(
                    "server rejected thinking effort %r; using %r from now on", self.effort, lower
                )
                self.effort = lower
                return True
        if (
            err.status in (400, 404)
            and self.route == "chat"
            and self._settings.may_switch_to_responses
            and err.mentions("/responses", "responses api")
        ):
            log.warning("model is only available on the Responses API; switching route")
            self._settings = replace(self._settings, route="responses")
            return True
        return False

    def _request(self, conv: Conversation) -> tuple[str, dict[str, str], dict[str, Any]]:
        s = self._settings
        url = request_url(s)
        if s.route == "anthropic":
            headers = {"x-api-key": s.api_key, "anthropic-version": s.anthropic_version}
            return url, headers, anthropic.build_body(conv, s.anthropic_thinking, s.prompt_caching)
        headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
        if s.route == "responses":
            return url, headers, openai_responses.build_body(conv)
        return url, headers, openai_chat.build_body(conv, s.max_tokens_field)

    def _parse(self, data: Any) -> LLMResponse:
        if self.route == "anthropic":
            return anthropic.parse_response(data)
        if self.route == "responses":
            return openai_responses.parse_response(data)
        return openai_chat.parse_response(data)

    async def _once(self, conv: Conversation, round_number: int) -> LLMResponse:
        url, headers, body = self._request(conv)
        headers["content-type"] = "application/json"
        payload = json.dumps(body, ensure_ascii=False)
        log.info("llm call %d model=%s route=%s", round_number, conv.model, self.route)
        log.debug("llm request body: %s", payload)
        started = time.monotonic()
        try:
            response = await self._http.post(url, headers=headers, content=payload.encode())
        except httpx.TimeoutException as exc:
            raise LLMError("llm_network_error", f"timeout ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:
            raise LLMError("llm_network_error", f"{type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise http_error(response)
        log.debug("llm response body: %s", response.text)
        try:
            data = response.json()
        except ValueError:
            raise LLMError("llm_bad_response", "response body is not JSON") from None
        result = self._parse(data)
        u = result.usage
        log.info(
            "llm response %d finish=%s input=%d output=%d cached=%d ms=%d",
            round_number,
            result.finish_reason,
            u.input_tokens,
            u.output_tokens,
            u.cached_tokens,
            int((time.monotonic() - started) * 1000),
        )
        return result
