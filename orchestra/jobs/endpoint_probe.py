"""The live endpoint check of preflight (orchestrator.md §2.4): a capability probe.

One tiny authenticated request per endpoint the roster uses, with one trivial tool the model
must call, built and sent by `buzz-agent`'s own LLM client so that what is checked is what
agents will send; all endpoints at once, each within `PROBE_SECONDS`. The oracle needs none.
It finds what stops a run (a refused key, a closed port: `problem`) and what makes one
meaningless (`warnings`, each with its fix): no structured tool call back, a reply the server
could not parse, a per-request context window below the manifest's `context_window_tokens`.
It also measures latency and tokens per second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from orchestra.agents.llm.client import LLMClient, ProviderSettings, request_url
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.types import Conversation, LLMResponse, ToolSpec, UserMessage
from orchestra.config.condition import Condition
from orchestra.config.endpoints import Endpoint
from orchestra.jobs.served_context import served_context_tokens
from orchestra.settings import SettingError
from orchestra.trial.launch import provider_settings

PROBE_SECONDS = 20.0
#: Room for one small tool call (and a reasoning model's preamble).
PROBE_OUTPUT_TOKENS = 256
PROBE_SYSTEM = "You are checking a tool. Call it."
PROBE_PROMPT = "Call the `ping` tool with the text `pong`."
PROBE_TOOL = ToolSpec(
    name="ping",
    description="Answers pong.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)
TOOL_CALL_FIX = (
    "serve the model with a tool-call chat template: llama.cpp `llama-server --jinja` (and "
    "`--chat-template-file` when the GGUF's own has no tools); vLLM `--enable-auto-tool-choice "
    "--tool-call-parser <the model's parser>`"
)


@dataclass(frozen=True)
class ProbeResult:
    endpoint: str
    url: str  # where the probe was posted, without credentials
    problem: str | None  # None: the endpoint answered
    warnings: list[str] = field(default_factory=list)
    tool_call: bool = False  # a structured tool call came back
    context_tokens: int | None = None  # the per-request window the server reports
    seconds: float | None = None  # the probe request's latency
    tokens_per_second: float | None = None

    def line(self) -> str:
        return f"endpoint {self.endpoint} ({self.url}): {self.problem}"

    def warning_lines(self) -> list[str]:
        return [f"endpoint {self.endpoint} ({self.url}): {warning}" for warning in self.warnings]

    def summary(self) -> str:
        """What the probe measured, for the endpoint check's line."""
        parts = ["tool call" if self.tool_call else "no tool call"]
        if self.context_tokens is not None:
            parts.append(f"context {self.context_tokens:,} tokens per request")
        if self.seconds is not None:
            parts.append(f"{self.seconds:.2f} s")
        if self.tokens_per_second is not None:
            parts.append(f"{self.tokens_per_second:.0f} tokens/s")
        return f"{self.endpoint}: {', '.join(parts)}"


def shown_url(url: str) -> str:
    """`url` without any user:password part."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


def context_warning(served: int | None, declared: int | None) -> str | None:
    """A server that gives one request less context than the manifest declares."""
    if served is None or declared is None or served >= declared:
        return None
    return (
        f"the server gives one request {served:,} tokens of context but the manifest declares "
        f"context_window_tokens {declared:,}: llama.cpp divides `-c` among its `--parallel` "
        f"slots (start it with `-c` of {declared:,} × slots, or `--parallel 1`); vLLM: "
        f"`--max-model-len {declared}`; Ollama: `num_ctx`; or declare the smaller window"
    )


def reply_warnings(response: LLMResponse) -> list[str]:
    if response.message.tool_calls:
        return []
    said = " ".join(response.message.said.split())[:80]
    return [f"asked to call a tool, the model answered in text ({said!r}): {TOOL_CALL_FIX}"]


async def probe_endpoint(
    name: str,
    endpoint: Endpoint,
    api_key: str | None,
    seconds: float = PROBE_SECONDS,
    declared_context: int | None = None,
) -> ProbeResult:
    if not api_key and endpoint.api_key_env is not None:
        return ProbeResult(name, endpoint.base_url or "-", f"{endpoint.api_key_env} is not set")
    try:
        settings = provider_settings(name, endpoint, api_key)
    except SettingError as error:
        return ProbeResult(name, endpoint.base_url or "-", str(error))
    url = shown_url(request_url(settings))
    try:
        async with asyncio.timeout(seconds):
            response, served, took = await _ask(settings, seconds)
    except TimeoutError:
        return ProbeResult(name, url, f"no answer within {seconds:g} s")
    except LLMError as error:
        detail = error.detail.replace(api_key, "[REDACTED]") if api_key else error.detail
        if error.is_invalid_output:  # the server is up; the model's output did not parse
            warning = f"the server could not parse the model's reply ({detail}): {TOOL_CALL_FIX}"
            return ProbeResult(name, url, None, [warning])
        return ProbeResult(name, url, f"{error.describe()}: {detail}")
    warnings = reply_warnings(response)
    if (too_small := context_warning(served, declared_context)) is not None:
        warnings.append(too_small)
    output = response.usage.output_tokens
    return ProbeResult(
        name,
        url,
        None,
        warnings,
        tool_call=bool(response.message.tool_calls),
        context_tokens=served,
        seconds=took,
        tokens_per_second=output / took if output and took > 0 else None,
    )


async def _ask(settings: ProviderSettings, seconds: float) -> tuple[LLMResponse, int | None, float]:
    """The probe request, the served context window (asked meanwhile) and the latency."""
    client = LLMClient(settings, effort=None, timeout_secs=seconds, max_retries=0)
    conversation = Conversation(
        model=settings.model,
        system=PROBE_SYSTEM,
        history=[UserMessage(PROBE_PROMPT)],
        tools=[PROBE_TOOL],
        max_output_tokens=PROBE_OUTPUT_TOKENS,
        effort=None,
        require_tool_call=True,
    )
    try:
        started = time.monotonic()
        response, served = await asyncio.gather(
            _timed(client, conversation), served_context_tokens(settings)
        )
        return response[0], served, response[1] - started
    finally:
        await client.aclose()


async def _timed(client: LLMClient, conversation: Conversation) -> tuple[LLMResponse, float]:
    response = await client.complete(conversation, 0)
    return response, time.monotonic()


async def probe_endpoints(
    condition: Condition, api_keys: Mapping[str, str], seconds: float = PROBE_SECONDS
) -> list[ProbeResult]:
    """Every non-oracle endpoint the roster uses, probed concurrently, in name order."""
    declared: dict[str, int] = {}
    for entry in condition.manifest.roster:
        window = entry.generation.context_window_tokens
        if window is not None:
            declared[entry.endpoint] = max(window, declared.get(entry.endpoint, 0))
    endpoints = sorted(
        (name, endpoint)
        for name, endpoint in condition.used_endpoints().items()
        if not endpoint.is_oracle
    )
    return list(
        await asyncio.gather(
            *(
                probe_endpoint(
                    name, ep, api_keys.get(ep.api_key_env or ""), seconds, declared.get(name)
                )
                for name, ep in endpoints
            )
        )
    )
