"""Helpers for the agent-tree tests: a recording ACP client, the agent under test, the test
environment, FIFOs and exit waits, and an MCP client held open by a task of its own. A module of its own, not conftest.py: several test folders
have a conftest.py, so `from conftest import ...` would pick whichever was imported last."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VENV_BIN = Path(sys.executable).parent
BUZZ_AGENT = str(VENV_BIN / "buzz-agent")
BUZZ_DEV_MCP = str(VENV_BIN / "buzz-dev-mcp")


@dataclass
class RecordingClient:
    """ACP client side: records everything the agent sends and answers permissions."""

    permission_choice: str | None = "allow_always"  # option kind to pick; None = cancel
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permission_requests: list[Any] = field(default_factory=list)
    extensions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        self.permission_requests.append(tool_call)
        for option in options:
            if option.kind == self.permission_choice:
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
                )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.extensions.append((method, params))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(method)

    def of_kind(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if getattr(u, "session_update", None) == kind]

    def usage_notifications(self) -> list[dict[str, Any]]:
        return [p for m, p in self.extensions if m == "goose/unstable/session/update"]


@dataclass
class AgentUnderTest:
    conn: Any
    process: Any
    client: RecordingClient
    cwd: Path
    stderr_path: Path

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def new_session(
        self,
        tools: bool = True,
        system_prompt: str | None = None,
        heartbeat_secs: float | None = None,
    ) -> str:
        from acp import PROTOCOL_VERSION
        from acp.schema import McpServerStdio

        await self.conn.initialize(protocol_version=PROTOCOL_VERSION)
        servers = (
            [McpServerStdio(name="buzz-dev-mcp", command=BUZZ_DEV_MCP, args=[], env=[])]
            if tools
            else []
        )
        meta: dict[str, Any] = {}
        if system_prompt is not None:
            meta["systemPrompt"] = system_prompt
        if heartbeat_secs is not None:
            meta["heartbeatSecs"] = heartbeat_secs
        response = await self.conn.new_session(cwd=str(self.cwd), mcp_servers=servers, **meta)
        return response.session_id

    async def prompt(self, session_id: str, text: str) -> Any:
        from acp import text_block

        return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])


def agent_environment(overrides: dict[str, str]) -> dict[str, str]:
    """The test process environment minus provider variables, plus `overrides`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BUZZ_AGENT_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_"))
    }
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    env.update(overrides)
    return env


async def wait_for_exit(pid: int, timeout_secs: float = 10.0) -> None:
    """Wait until a process that is not our child has terminated (a zombie counts), using a
    pidfd so the wait is event-driven rather than polled."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, lambda: exited.done() or exited.set_result(None))
    try:
        await asyncio.wait_for(exited, timeout_secs)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def read_fifo(path: Path, timeout_secs: float = 30.0) -> str:
    """Block until a writer (e.g. a shell command) has written to the FIFO and closed it."""
    return await asyncio.wait_for(asyncio.to_thread(path.read_text), timeout_secs)


def make_fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@contextlib.asynccontextmanager
async def held_mcp_client(
    transport: Any, connect_within: float | None = None
) -> AsyncIterator[Any]:
    """An MCP SDK `Client` connected over `transport` (server parameters or a transport),
    its connection awaited at most `connect_within` seconds.
    pytest-asyncio sets fixtures up and tears them down in different tasks while anyio scopes
    must be exited by the task that entered them, so an owner task holds the client."""
    from mcp import Client

    ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def own() -> None:
        try:
            async with Client(transport) as client:
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    owner = asyncio.create_task(own())
    try:
        async with asyncio.timeout(connect_within):
            client = await ready
        yield client
    finally:
        stop.set()
        await owner
