"""The context window an endpoint's server gives one request (orchestrator.md §2.4), for the
endpoint check's capability probe.

Self-hosted servers say it on their own routes: llama.cpp's `GET /props`
(`default_generation_settings.n_ctx`: the per-slot window, which is `-c` divided among the
`--parallel` slots), vLLM's `GET /v1/models` (`max_model_len` of the served model) and Ollama's
`POST /api/show` (`num_ctx` in the model's `parameters`). Anthropic's API says nothing; its
documented window is used. Any other server: unknown (None).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import httpx

from orchestra.agents.llm.client import ProviderSettings

LOOKUP_SECONDS = 5.0
#: Anthropic's documented context window of its current models (docs.anthropic.com, "Models").
ANTHROPIC_CONTEXT_TOKENS = 200_000
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _llama_cpp(data: Any, _model: str) -> int | None:
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def _vllm(data: Any, model: str) -> int | None:
    models = data.get("data") if isinstance(data, dict) else None
    for entry in models if isinstance(models, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return _positive(entry.get("max_model_len"))
    return None


def _ollama(data: Any, _model: str) -> int | None:
    parameters = data.get("parameters") if isinstance(data, dict) else None
    found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    return int(found.group(1)) if found else None


async def served_context_tokens(settings: ProviderSettings) -> int | None:
    """The per-request context window the endpoint's server reports, else None."""
    if settings.route == "anthropic":
        return ANTHROPIC_CONTEXT_TOKENS
    root = settings.base_url.removesuffix("/v1")
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    async with httpx.AsyncClient(timeout=LOOKUP_SECONDS, headers=headers) as http:

        async def ask(
            method: str, url: str, read: Callable[[Any, str], int | None], body: Any = None
        ) -> int | None:
            try:
                response = await http.request(method, url, json=body)
                return read(response.json(), settings.model) if response.is_success else None
            except (httpx.HTTPError, ValueError):
                return None

        answers = await asyncio.gather(
            ask("GET", f"{root}/props", _llama_cpp),
            ask("GET", f"{settings.base_url}/models", _vllm),
            ask("POST", f"{root}/api/show", _ollama, {"model": settings.model}),
        )
    return next((tokens for tokens in answers if tokens is not None), None)
