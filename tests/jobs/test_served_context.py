"""The per-request context window each kind of self-hosted server reports, read from its own
route (orchestra/jobs/served_context.py), against a local server that answers as each does."""

import pytest
from fake_llm import DEFAULT_MODEL, FakeLLM, Reply, llama_cpp_props

from orchestra.agents.llm.client import ProviderSettings
from orchestra.agents.llm.types import Route
from orchestra.jobs.served_context import ANTHROPIC_CONTEXT_TOKENS, served_context_tokens

VLLM_MODELS = Reply(
    body={
        "object": "list",
        "data": [
            {"id": "other-model", "object": "model", "max_model_len": 8192},
            {"id": DEFAULT_MODEL, "object": "model", "max_model_len": 32768},
        ],
    }
)
OLLAMA_SHOW = Reply(
    body={
        "parameters": 'stop "<|im_end|>"\nnum_ctx 16384\ntemperature 0.7',
        "model_info": {"qwen3.context_length": 40960},
    }
)


def chat_settings(llm: FakeLLM, route: Route = "chat") -> ProviderSettings:
    return ProviderSettings(
        route=route,
        base_url=f"{llm.base_url}/v1",
        api_key="",
        model=DEFAULT_MODEL,
    )


@pytest.mark.parametrize(
    ("path", "reply", "tokens"),
    [
        ("/props", llama_cpp_props(4096), 4096),
        ("/v1/models", VLLM_MODELS, 32768),
        ("/api/show", OLLAMA_SHOW, 16384),  # num_ctx, what Ollama gives a request
    ],
)
async def test_each_server_kind_reports_its_per_request_window(
    path: str, reply: Reply, tokens: int
) -> None:
    with FakeLLM() as llm:
        llm.routes[path] = reply
        assert await served_context_tokens(chat_settings(llm)) == tokens
        assert llm.requests == []  # none of it went through the model's script


async def test_a_server_that_says_nothing_is_unknown_and_anthropic_is_documented() -> None:
    with FakeLLM() as llm:
        assert await served_context_tokens(chat_settings(llm)) is None
        anthropic = chat_settings(llm, "anthropic")
        assert await served_context_tokens(anthropic) == ANTHROPIC_CONTEXT_TOKENS
