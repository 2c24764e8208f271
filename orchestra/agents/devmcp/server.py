"""The MCP server object and its tool definitions (§3.2)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import cache
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from orchestra.agents.devmcp.files import (
    DEFAULT_LIMIT,
    FileToolError,
    read_file,
    str_replace,
)
from orchestra.agents.devmcp.shell import DEFAULT_TIMEOUT_SECS, finish_pending_kills, run_shell
from orchestra.agents.devmcp.workspace import Workspace

SHELL_DESCRIPTION = (
    "Run a bash command (bash -c, not a login shell) in the working directory and return the "
    "last 8 KiB of its combined stdout/stderr followed by its exit code. Each call is a fresh "
    "process: cd and exported variables do not persist. stdin is /dev/null. The `buzz` CLI is "
    "on PATH, already authenticated as you. Long output is saved to a file whose path is shown."
)
READ_FILE_DESCRIPTION = (
    "Read a UTF-8 text file with numbered lines (`<n>:<text>`). The path may be absolute, "
    "start with ~, or be relative to the working directory. Use offset/limit for long files."
)
STR_REPLACE_DESCRIPTION = (
    "Edit a file by replacing exact text. old_str must match exactly once unless replace_all "
    "is true. With an empty old_str and a path that does not exist, the file is created with "
    "new_str. Returns a unified diff of the change."
)
TODO_DESCRIPTION = (
    "Replace your todo list for this session with the given items and get it back as a "
    "Markdown checklist. Use it to keep track of multi-step work."
)
_TODO_MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}
#: This process's workspace (`serve` sets it): one server process serves one session.
_serving: Workspace | None = None


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    status: Literal["pending", "in_progress", "done"] = "pending"


def render_todos(items: list[TodoItem]) -> str:
    if not items:
        return "(todo list is empty)"
    return "\n".join(f"- {_TODO_MARKS[item.status]} {item.text}" for item in items)


def _text_result(text: str, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def _file_tool_result(run: Callable[[], str]) -> CallToolResult:
    """The file tool's text, or its `FileToolError` as an error result."""
    try:
        return _text_result(run())
    except FileToolError as exc:
        return _text_result(str(exc), is_error=True)


@asynccontextmanager
async def _lifespan(_server: MCPServer) -> AsyncIterator[None]:
    try:
        yield None
    finally:
        await finish_pending_kills()


def serve(workspace: Workspace) -> None:
    """Serve the tools in `workspace` over stdio until the client goes away."""
    global _serving
    _serving = workspace
    build_server().run()


def _workspace() -> Workspace:
    if _serving is None:
        raise RuntimeError("the tools run only in a server that serve() started")
    return _serving


@cache
def build_server() -> MCPServer:
    """The server and its tools, which act in the workspace `serve` was given. Built once per
    process; the fork server builds it before it forks, so a forked buzz-dev-mcp shares the
    tools' argument models and schemas instead of building its own (docs/performance.md)."""
    server = MCPServer("buzz-dev-mcp", lifespan=_lifespan)

    @server.tool(
        description=SHELL_DESCRIPTION,
        annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True),
        structured_output=False,
    )
    async def shell(
        command: Annotated[str, Field(description="The bash command to run.")],
        timeout_secs: Annotated[
            int, Field(description="Timeout in seconds (1-600, default 120).")
        ] = DEFAULT_TIMEOUT_SECS,
    ) -> CallToolResult:
        outcome = await run_shell(command, timeout_secs, _workspace())
        return _text_result(outcome.text, outcome.is_error)

    # Python names differ from the tool names so they do not shadow the imported helpers.
    @server.tool(
        name="read_file",
        description=READ_FILE_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True),
        structured_output=False,
    )
    async def read_file_tool(
        path: Annotated[str, Field(description="File path.")],
        offset: Annotated[int, Field(description="First line number, 1-based.")] = 1,
        limit: Annotated[int, Field(description="Maximum lines (1-10000).")] = DEFAULT_LIMIT,
    ) -> CallToolResult:
        return _file_tool_result(lambda: read_file(path, offset, limit, _workspace().cwd))

    @server.tool(
        name="str_replace",
        description=STR_REPLACE_DESCRIPTION,
        annotations=ToolAnnotations(destructive_hint=True),
        structured_output=False,
    )
    async def str_replace_tool(
        path: Annotated[str, Field(description="File path.")],
        old_str: Annotated[str, Field(description="Exact text to replace.")],
        new_str: Annotated[str, Field(description="Replacement text.")],
        replace_all: Annotated[bool, Field(description="Replace every occurrence.")] = False,
    ) -> CallToolResult:
        return _file_tool_result(
            lambda: str_replace(path, old_str, new_str, replace_all, _workspace().cwd)
        )

    @server.tool(name="todo", description=TODO_DESCRIPTION, structured_output=False)
    async def todo_tool(
        items: Annotated[list[TodoItem], Field(description="The complete new todo list.")],
    ) -> CallToolResult:
        # One server process serves one session, so the list needs no session key; the
        # rendered list is the whole state, nothing else reads it.
        return _text_result(render_todos(items))

    return server
