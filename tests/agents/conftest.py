"""Fixtures for buzz-agent / buzz-dev-mcp tests (helpers live in agent_support.py).

* `fake_llm` (function): a started `fake_llm.FakeLLM`.
* `start_agent` (function): `async with start_agent(env, cwd=None) as agent:` spawns the real
  `buzz-agent` console script over stdio and connects a recording ACP client
  (`agent.conn`, `agent.client`, `agent.process`, `agent.stderr_text()`,
  `await agent.new_session(tools=True)`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from agent_support import BUZZ_AGENT, AgentUnderTest, RecordingClient, agent_environment
from fake_llm import FakeLLM


@pytest.fixture
def fake_llm() -> Any:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def start_agent(tmp_path: Path) -> Callable[..., Any]:
    counter = iter(range(1, 1000))

    @contextlib.asynccontextmanager
    async def start(
        env: dict[str, str], cwd: Path | None = None, client: RecordingClient | None = None
    ) -> AsyncIterator[AgentUnderTest]:
        from acp import spawn_agent_process

        number = next(counter)
        workdir = cwd or tmp_path / f"work{number}"
        workdir.mkdir(parents=True, exist_ok=True)
        stderr_path = tmp_path / f"agent{number}.stderr.log"
        recorder = client or RecordingClient()
        # Scratch directories of tool servers (even SIGKILLed ones) stay inside the test's dir.
        scratch = tmp_path / "tmp"
        scratch.mkdir(exist_ok=True)
        env = {"TMPDIR": str(scratch), **env}
        with stderr_path.open("wb") as stderr:
            async with spawn_agent_process(
                recorder,
                BUZZ_AGENT,
                env=agent_environment(env),
                cwd=workdir,
                transport_kwargs={"stderr": stderr.fileno()},
            ) as (conn, process):
                yield AgentUnderTest(
                    conn=conn,
                    process=process,
                    client=recorder,
                    cwd=workdir,
                    stderr_path=stderr_path,
                )

    return start
