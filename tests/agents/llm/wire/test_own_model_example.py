"""The README's "Run your own model" worked example, end to end: the repository's own manifest
and endpoint config (only the port changed to where the fake OpenAI-compatible server listens),
`orchestra benchmark` through a real relay, the agent tree and the task's verifier."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_llm import FakeLLM, chat_tool_call, probe_tool_call

from orchestra.paths import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MANIFEST = PROJECT_ROOT / "manifests" / "buzz-native-solo-local.yaml"
ENDPOINTS = PROJECT_ROOT / "endpoints" / "local-openai.json"
TASK = PROJECT_ROOT / "tasks" / "buzz-native" / "user-mention"
EXAMPLE_URL = "http://127.0.0.1:8000/v1"


def test_the_worked_example_runs_scored_against_a_local_server(
    relay_url: str, tmp_path: Path
) -> None:
    with FakeLLM() as llm:
        text = ENDPOINTS.read_text(encoding="utf-8")
        assert EXAMPLE_URL in text
        endpoints = tmp_path / "local-openai.json"
        endpoints.write_text(text.replace(EXAMPLE_URL, f"{llm.base_url}/v1"), encoding="utf-8")
        task = tmp_path / "tasks" / TASK.name
        shutil.copytree(TASK, task, ignore=shutil.ignore_patterns("__pycache__"))
        llm.script(
            probe_tool_call(),  # the endpoint check
            chat_tool_call("buzz_dev_mcp__shell", {"command": "echo checked"}),
        )
        environ = {
            k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))
        }
        done = subprocess.run(
            [sys.executable, "-c", "from orchestra.cli.main import main; main()",
             "benchmark", "--manifest", str(MANIFEST), "--endpoint-config", str(endpoints),
             "-p", str(task), "-k", "1", "--artifact-root", str(PROJECT_ROOT),
             "--jobs-dir", str(tmp_path / "jobs"), "--state-dir", str(tmp_path / "state"),
             "--job-name", "own", "--stack", "external", "--relay-url", relay_url,
             "--env", "local"],
            capture_output=True, text=True, timeout=300, env=environ,
        )  # fmt: skip
    said = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, said

    def trials(job: Path) -> list[dict]:
        results = [json.loads(p.read_text()) for p in job.glob("*/result.json")]
        return [r for r in results if "trial_name" in r]

    run = tmp_path / "jobs" / "own"
    assert [t["status"] for t in trials(run / "own")] == ["scored"], said
    # the do-nothing floor's own trial (the null endpoint: no request reaches the server)
    assert [t["status"] for t in trials(run / "floor")] == ["scored"], said
    assert {r.body["model"] for r in llm.requests} == {"Qwen/Qwen3-8B"}  # the id, not the name
    assert all("authorization" not in r.headers for r in llm.requests)  # keyless on loopback
