"""A condition on the fake provider (tests/fake_llm.py): its manifest, one solo seat on the fake
model, and its endpoint config, OpenAI- or Anthropic-compatible."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_llm import DEFAULT_MODEL, FakeLLM

PERSONA = "manifests/personas/buzz-native-solo.md"
PERSONA_SHA256 = "29035c227f093a4b59dfd89a4d5bbf5efd950f8e7be78656cb3c83274aa819a5"


def manifest(path: Path, price_per_million: float = 1.0, context_window: int | None = None) -> Path:
    generation = (
        f"    generation:\n      context_window_tokens: {context_window}\n"
        if context_window
        else ""
    )
    path.write_text(
        f"""schema_version: "1"
condition: fake-provider
roster:
  - id: solo
    kind: orchestrator
    role: solo
    count: 1
    endpoint: {DEFAULT_MODEL}
    model_revision: {DEFAULT_MODEL}
    prompt:
      path: {PERSONA}
      sha256: {PERSONA_SHA256}
    include_platform_prompt: true
{generation}prices:
  {DEFAULT_MODEL}:
    input_per_million_usd: {price_per_million}
    cached_input_per_million_usd: {price_per_million}
    output_per_million_usd: {price_per_million}
trial_budget:
  timeout_seconds: 120
""",
        encoding="utf-8",
    )
    return path


def endpoints(path: Path, llm: FakeLLM, provider: str = "openai", **env: str) -> Path:
    endpoint: dict[str, Any] = {"provider": provider, "env": env}
    if provider == "openai":
        endpoint |= {"api_key_env": "FAKE_PROVIDER_KEY", "base_url": f"{llm.base_url}/v1"}
        endpoint["env"] = {"OPENAI_COMPAT_API": "chat", **env}
    else:
        endpoint |= {"api_key_env": "FAKE_PROVIDER_KEY"}
        endpoint["env"] = {"ANTHROPIC_BASE_URL": llm.base_url, **env}
    path.write_text(json.dumps({DEFAULT_MODEL: endpoint}), encoding="utf-8")
    return path
