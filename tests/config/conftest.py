"""Builders for config and planning tests: small manifests, endpoint configs and task trees."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PERSONA_SHA256 = "29035c227f093a4b59dfd89a4d5bbf5efd950f8e7be78656cb3c83274aa819a5"

LUNA_MANIFEST = f"""\
schema_version: "1"
condition: buzz-native-solo-luna
roster:
  - id: solo
    kind: orchestrator
    role: solo
    count: 1
    endpoint: gpt-5.6-luna
    model_revision: gpt-5.6-luna
    prompt:
      path: manifests/personas/buzz-native-solo.md
      sha256: {PERSONA_SHA256}
    include_platform_prompt: true
    generation:
      max_output_tokens: 4096
      context_window_tokens: 200000
      thinking_effort: medium
prices:
  gpt-5.6-luna:
    input_per_million_usd: 0.2
    cached_input_per_million_usd: 0.02
    output_per_million_usd: 1.2
trial_budget:
  timeout_seconds: 300
metadata:
  suite: buzz-native
"""


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write `text` (dedented) to `tmp_path/relative` and return the path."""

    def write(relative: str, text: str) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


def make_task(
    root: Path,
    dir_name: str,
    layer: str | None = "regression",
    *,
    name: str | None = None,
    fixture: str | None = "schema_version = 1\n",
    skip: tuple[str, ...] = (),
) -> Path:
    """A minimal valid Buzz task directory (`fixture=None`: a Harbor task, no
    `buzz-fixture.toml`); `skip` leaves out listed parts."""
    task = root / dir_name
    task.mkdir(parents=True)
    lines = ['schema_version = "1.3"', "", "[task]"]
    if "name" not in skip:
        lines.append(f'name = "{name or "buzz-native/" + dir_name}"')
    lines += ["", "[metadata]"]
    if layer is not None:
        lines.append(f'evaluation_layer = "{layer}"')
    lines += ["", "[agent]", "timeout_sec = 300.0", "", "[verifier]", "timeout_sec = 30.0"]
    (task / "task.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if "instruction" not in skip:
        (task / "instruction.md").write_text("Do the thing.\n\n", encoding="utf-8")
    if "environment" not in skip:
        (task / "environment").mkdir()
        (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim-bookworm\n")
    if "tests" not in skip:
        (task / "tests").mkdir()
        (task / "tests" / "test.sh").write_text("#!/bin/sh\nset -eu\n")
    if fixture is not None:
        (task / "buzz-fixture.toml").write_text(textwrap.dedent(fixture), encoding="utf-8")
    return task
