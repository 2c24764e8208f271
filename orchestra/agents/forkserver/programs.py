"""The programs a fork server starts, and what it imports once for all of them."""

from __future__ import annotations

import importlib
from collections.abc import Callable

#: The console scripts of pyproject.toml that run in an agent tree, as `module:function`.
ENTRY_POINTS = {
    "buzz-acp": "orchestra.agents.acp.cli:main",
    "buzz-agent": "orchestra.agents.agent.cli:main",
    "buzz-dev-mcp": "orchestra.agents.devmcp.cli:main",
    "buzz": "orchestra.buzz.cli:main",
}
#: Started through the server's client (its stub is bound over their console scripts); the
#: tree's first program, buzz-acp, is the server's own first child.
CLIENT_PROGRAMS = ("buzz-agent", "buzz-dev-mcp", "buzz")

#: Everything the programs import on their way to serving, which is most of their start-up
#: CPU (docs/performance.md): their entry modules import little at the top.
_SDK_MODULES = (
    "orchestra.agents.acp.bridge",  # the ACP SDK, the relay client
    "orchestra.agents.agent.acp_agent",  # the ACP SDK again, the tool loop
)
_MODULES = (
    "orchestra.agents.agent.trajectory",
    "orchestra.agents.llm.client",
    "mcp",  # buzz-agent's MCP client (agents/agent/tools.py)
    "orchestra.agents.agent.mcp_stdio",  # its stdio transport, forked or the SDK's
    "orchestra.agents.devmcp.server",  # the MCP SDK's server
    "orchestra.agents.devmcp.workspace",
    "orchestra.buzz.client",
    "orchestra.buzz.core",
    "orchestra.buzz.rows",
    "asyncio",
    # what the MCP SDK's stdio transports import once they run (anyio's asyncio backend)
    "anyio._backends._asyncio",
    "anyio._core._sockets",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "rich.logging",
    # what the programs imported after the fork (h-pss, one oracle trial): each such import
    # is the program's private memory, imported here it is shared
    "httpcore",  # buzz-agent's model client's transport (httpx imports it on first use)
    "httpcore._async.http11",
    "httpcore._backends.anyio",
    "h11",
    "certifi",
    "psutil",  # buzz-acp's process trees (orchestra.processes imports it on first use)
    "psutil._pslinux",
    "encodings.idna",  # host names (buzz-acp's relay connection, `buzz`)
    "stringprep",
    "concurrent.futures.thread",  # the event loop's getaddrinfo executor
    "glob",
    "importlib.resources.readers",
    "resource",
)


def preload() -> None:
    """Import every program's modules, as each imports them (ACP without field docstrings),
    then do their first-use work (`warm`)."""
    from orchestra.agents.sdk_imports import field_docstrings_skipped

    for entry_point in ENTRY_POINTS.values():
        importlib.import_module(entry_point.partition(":")[0])
    with field_docstrings_skipped():
        for name in _SDK_MODULES:
            importlib.import_module(name)
    for name in _MODULES:
        importlib.import_module(name)
    warm()


def entry_point(entry: str) -> Callable[[], object]:
    """The function a `module:function` names (its module imported already, or now)."""
    module, _, function = entry.partition(":")
    main: Callable[[], object] = getattr(importlib.import_module(module), function)
    return main


def warm() -> None:
    """First-use work of the programs, done once here: in a forked program it writes memory
    of the server's image, which then is that program's alone (docs/performance.md, h-pss2)."""
    complete_models()
    from orchestra.agents.devmcp.server import build_server

    build_server()  # buzz-dev-mcp's tools: an argument model and a schema each


def complete_models() -> None:
    """Build the pydantic models their imports left incomplete (forward references not yet
    defined then: the MCP SDK's `CallToolRequest`, `SamplingMessage`, …), which pydantic would
    otherwise build at their first use in every program that uses them."""
    from pydantic import BaseModel

    seen: set[type[BaseModel]] = set()
    pending = [BaseModel]
    while pending:
        for model in pending.pop().__subclasses__():
            if model not in seen:
                seen.add(model)
                pending.append(model)
                if not model.__pydantic_complete__:
                    model.model_rebuild(raise_errors=False)
