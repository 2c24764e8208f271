"""One agent process of the pool (agent-harness.md §1.7, §1.8)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any

from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    ClientCapabilities,
    EnvVariable,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    McpServerStdio,
    PromptResponse,
    TextContentBlock,
)

from orchestra.agents.acp.acp_client import BridgeClient
from orchestra.agents.acp.config import AcpConfig
from orchestra.agents.acp.proctree import AgentProcess, start_agent_process
from orchestra.processes import descendants, stop_tree

CLIENT_VERSION = "0.1.0"


@dataclass
class Session:
    session_id: str
    turns: int = 0


@dataclass
class AgentSlot:
    """A spawned agent: its process, ACP connection and per-channel sessions."""

    index: int
    process: AgentProcess
    conn: ClientSideConnection
    client: BridgeClient
    meta_system_prompt: bool = False
    sessions: dict[str, Session] = field(default_factory=dict)
    busy: bool = False
    # The channel whose session is being created here ahead of its turn (sessions.py).
    claimed_by: str | None = None
    stopping: bool = False
    # Set when a turn failed because the pipe closed: the exit watcher may run only after the
    # slot was released, and must still report the exit as `during_turn`.
    lost_turn: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    async def initialize(self) -> InitializeResponse:
        response = await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                terminal=False,
            ),
            client_info=Implementation(name="buzz-acp", version=CLIENT_VERSION),
        )
        buzz_meta = (response.field_meta or {}).get("buzz")
        self.meta_system_prompt = (
            isinstance(buzz_meta, dict) and buzz_meta.get("systemPrompt") is True
        )
        return response

    async def new_session(self, config: AcpConfig, system_prompt: str) -> str:
        servers: list[Any] = []
        if config.mcp_command is not None:
            servers.append(
                McpServerStdio(
                    name="buzz-dev-mcp",
                    command=config.mcp_command,
                    args=list(config.mcp_args),
                    env=[EnvVariable(name=k, value=v) for k, v in mcp_environment(config).items()],
                )
            )
        meta: dict[str, Any] = {"heartbeatSecs": config.heartbeat_secs}
        if self.meta_system_prompt:
            meta["systemPrompt"] = system_prompt
        response = await self.conn.new_session(cwd=config.cwd, mcp_servers=servers, **meta)
        return response.session_id

    async def prompt(self, session_id: str, text: str) -> PromptResponse:
        return await self.conn.prompt(
            session_id=session_id, prompt=[TextContentBlock(type="text", text=text)]
        )

    async def cancel(self, session_id: str) -> None:
        await self.conn.cancel(session_id=session_id)

    async def kill(self) -> None:
        """End an unresponsive agent's tree; its exit watcher then replaces it."""
        self.lost_turn = True
        await stop_tree(self.process, grace=2.0)

    async def stop(self, grace_s: float = 2.0) -> None:
        """Close stdin, give the agent `grace_s` to exit, then end its whole tree."""
        self.stopping = True
        known = descendants(self.process.pid)
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            async with asyncio.timeout(grace_s):
                await self.process.wait()
        except TimeoutError:
            pass
        await stop_tree(self.process, grace=grace_s, known=known)
        await self.conn.close()


def mcp_environment(config: AcpConfig) -> dict[str, str]:
    env = {"BUZZ_RELAY_URL": config.relay_url, "BUZZ_PRIVATE_KEY": config.keys.secret_hex}
    if "BUZZ_CLI_PATH" in os.environ:
        env["BUZZ_CLI_PATH"] = os.environ["BUZZ_CLI_PATH"]
    env.update((k, v) for k, v in os.environ.items() if k.startswith("BUZZ_DEV_MCP_"))
    return env


async def spawn_slot(
    index: int,
    config: AcpConfig,
    client: BridgeClient,
    process: AgentProcess | None = None,
) -> AgentSlot:
    """Connect to the agent `process` (started by buzz-acp's entry point), or start one."""
    if process is None:
        process = await start_agent_process(config.agent_command, config.agent_args, config.cwd)
    assert process.stdin is not None and process.stdout is not None

    def on_frame(event: StreamEvent) -> None:
        # Every message from the agent on a session counts as activity for the idle timeout.
        if event.direction is StreamDirection.INCOMING:
            params = event.message.get("params")
            if isinstance(params, dict) and isinstance(params.get("sessionId"), str):
                client.touch(params["sessionId"])

    # acp's `Client` Protocol lists the unstable elicitation methods and `on_connect` as
    # required, but its router looks every handler up with getattr and answers a missing one
    # with method-not-found, which is what the bridge wants for methods it does not offer.
    conn = ClientSideConnection(
        client,  # type: ignore[arg-type]
        process.stdin,
        process.stdout,
        observers=[on_frame],
    )
    return AgentSlot(index=index, process=process, conn=conn, client=client)
