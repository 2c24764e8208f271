"""MCP servers of one session and the tools they offer the model (agent-harness.md §2.10)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from orchestra.agents.llm.types import ToolCall, ToolSpec
from orchestra.errors import OrchestraError

if TYPE_CHECKING:
    from acp.schema import ToolKind

log = logging.getLogger("mcp")

# Only these of buzz-agent's own variables reach tool servers: provider keys never do.
_INHERITED_ENV = ("PATH", "HOME", "TERM", "LANG", "LC_ALL", "TMPDIR")
MAX_TOOL_NAME = 64
MAX_SCHEMA_BYTES = 4096
MAX_TOOLS = 128
MAX_DESCRIPTION_CHARS = 1024
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
_TOOL_KINDS: dict[str, ToolKind] = {"shell": "execute", "read_file": "read", "str_replace": "edit"}


class ToolServerError(OrchestraError):
    """An MCP server could not be started or listed."""


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    command: str
    args: list[str]
    env: dict[str, str]


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    is_error: bool


@dataclass(frozen=True)
class _Binding:
    server: McpServerConnection
    tool: str


def model_tool_name(server: str, tool: str) -> str:
    return f"{_UNSAFE_NAME_CHARS.sub('_', server)}__{tool}"


def tool_kind(model_name: str) -> ToolKind:
    return _TOOL_KINDS.get(model_name.rpartition("__")[2], "other")


ELISION_MARKER = "[… {n} bytes elided …]"


def elide_middle(text: str, limit: int, marker: str = ELISION_MARKER) -> str:
    """Keep head and tail of an over-long result, marking what was cut (`marker` with `{n}`,
    the number of bytes cut)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    half = limit // 2
    elided = len(data) - 2 * half
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[-half:].decode("utf-8", errors="ignore")
    return f"{head}\n{marker.format(n=elided)}\n{tail}"


def result_text(result: Any) -> str:
    parts = []
    for block in result.content or []:
        if getattr(block, "type", None) == "text":
            parts.append(block.text)
        else:
            parts.append(f"[{getattr(block, 'type', 'unknown')} content omitted]")
    return "".join(parts)


class McpServerConnection:
    """One MCP server process. The SDK's client is an anyio context that must be exited by the
    task that entered it, so a dedicated owner task holds it open until `stop()`."""

    def __init__(self, spec: McpServerSpec, cwd: str) -> None:
        self.spec = spec
        self._cwd = cwd
        self._client: Any = None
        self._stop = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    async def start(self, timeout_secs: float) -> list[Any]:
        ready: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.create_task(self._own(ready), name=f"mcp:{self.spec.name}")
        try:
            async with asyncio.timeout(timeout_secs):
                return await asyncio.shield(ready)
        except TimeoutError:
            if self._owner is not None:
                self._owner.cancel()  # still inside the handshake: stop() alone would wait
            await self.stop()
            raise ToolServerError(
                f"MCP server {self.spec.name!r} did not start within {timeout_secs:g} s"
            ) from None

    async def _own(self, ready: asyncio.Future[list[Any]]) -> None:
        from mcp import Client, StdioServerParameters

        from orchestra.agents.agent.mcp_stdio import stdio_transport

        env = {k: os.environ[k] for k in _INHERITED_ENV if k in os.environ} | self.spec.env
        params = StdioServerParameters(
            command=self.spec.command, args=self.spec.args, env=env, cwd=self._cwd
        )
        try:
            async with Client(stdio_transport(params)) as client:
                tools = await _list_all_tools(client)
                self._client = client
                ready.set_result(tools)
                await self._stop.wait()
        except Exception as exc:  # the SDK raises many types for a dead or broken server
            if not ready.done():
                ready.set_exception(
                    ToolServerError(f"MCP server {self.spec.name!r} failed to start: {exc!r}")
                )
            else:
                log.warning("MCP server %s stopped: %r", self.spec.name, exc)
        finally:
            self._client = None
            if not ready.done():
                ready.set_exception(ToolServerError(f"MCP server {self.spec.name!r} exited"))

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        if self._client is None:
            raise ToolServerError(f"MCP server {self.spec.name!r} is not running")
        return await self._client.call_tool(tool, arguments)

    async def stop(self) -> None:
        self._stop.set()
        if self._owner is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._owner


async def _list_all_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


@dataclass
class ToolBox:
    """The tools of one session, as offered to the model, and their execution."""

    cwd: str
    init_timeout: float
    call_timeout: float
    max_result_bytes: int
    specs: list[ToolSpec] = field(default_factory=list)
    _bindings: dict[str, _Binding] = field(default_factory=dict)
    _servers: list[McpServerConnection] = field(default_factory=list)
    _restarted: set[str] = field(default_factory=set)

    async def start(self, servers: list[McpServerSpec]) -> None:
        try:
            for spec in servers:
                connection = McpServerConnection(spec, self.cwd)
                self._servers.append(connection)
                self._register(connection, await connection.start(self.init_timeout))
        except BaseException:
            await self.close()
            raise

    def _register(self, server: McpServerConnection, tools: list[Any]) -> None:
        for tool in tools:
            name = model_tool_name(server.spec.name, tool.name)
            schema = tool.input_schema or {"type": "object", "properties": {}}
            if len(name) > MAX_TOOL_NAME:
                log.warning("tool %s skipped: name longer than %d characters", name, MAX_TOOL_NAME)
            elif len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
                log.warning("tool %s skipped: input schema larger than 4 KiB", name)
            elif len(self.specs) >= MAX_TOOLS:
                log.warning("tool %s skipped: more than %d tools", name, MAX_TOOLS)
            else:
                description = (tool.description or "")[:MAX_DESCRIPTION_CHARS]
                self.specs.append(ToolSpec(name=name, description=description, input_schema=schema))
                self._bindings[name] = _Binding(server=server, tool=tool.name)

    def problem(self, call: ToolCall) -> ToolOutcome | None:
        """The error result for a call that cannot run at all, or None."""
        if call.name not in self._bindings:
            available = ", ".join(self._bindings) or "(none)"
            return ToolOutcome(f'unknown tool "{call.name}"; available: {available}', True)
        try:
            call.parsed_arguments()
        except ValueError as exc:
            return ToolOutcome(f"invalid JSON in tool arguments: {exc}", True)
        return None

    async def execute(self, call: ToolCall) -> ToolOutcome:
        if (refusal := self.problem(call)) is not None:
            return refusal
        started = time.monotonic()
        log.info("tool %s id=%s started", call.name, call.id)
        outcome = await self._call(self._bindings[call.name], call.parsed_arguments())
        log.info(
            "tool %s id=%s %s ms=%d",
            call.name,
            call.id,
            "error" if outcome.is_error else "ok",
            int((time.monotonic() - started) * 1000),
        )
        return outcome

    async def _call(self, binding: _Binding, arguments: dict[str, Any]) -> ToolOutcome:
        try:
            async with asyncio.timeout(self.call_timeout):
                result = await binding.server.call(binding.tool, arguments)
        except TimeoutError:
            return ToolOutcome(f"tool timed out after {self.call_timeout:g} s", True)
        except Exception as exc:
            return await self._recover(binding.server, exc)
        text = elide_middle(result_text(result), self.max_result_bytes)
        return ToolOutcome(text, bool(result.is_error))

    async def _recover(self, server: McpServerConnection, exc: Exception) -> ToolOutcome:
        """A failing server is replaced by a fresh process once per session."""
        name = server.spec.name
        log.warning("MCP server %s call failed: %r", name, exc)
        if name in self._restarted:
            return ToolOutcome(f"tool server failed: {exc}", True)
        self._restarted.add(name)
        await server.stop()
        fresh = McpServerConnection(server.spec, self.cwd)
        try:
            await fresh.start(self.init_timeout)
        except ToolServerError as start_error:
            return ToolOutcome(
                f"tool server failed and could not be restarted: {start_error}", True
            )
        self._servers[self._servers.index(server)] = fresh
        for model_name, binding in list(self._bindings.items()):
            if binding.server is server:
                self._bindings[model_name] = _Binding(server=fresh, tool=binding.tool)
        return ToolOutcome("tool server restarted; call the tool again", True)

    async def close(self) -> None:
        for server in self._servers:
            await server.stop()
        self._servers.clear()
