"""`buzz-dev-mcp` entry point: stdio MCP server; never writes anything but protocol to stdout."""

from __future__ import annotations

import logging
import os
import signal
import sys

log = logging.getLogger("mcp")


def _exit_on_term(signum: int, _frame: object) -> None:
    # Turn SIGTERM into a normal exit so the scratch directory is removed.
    raise SystemExit(128 + signum)


def main() -> None:
    from orchestra.agents.logs import parse_level, setup_logging

    try:
        level = parse_level(
            os.environ.get("BUZZ_DEV_MCP_LOG_LEVEL", "info"), "BUZZ_DEV_MCP_LOG_LEVEL"
        )
    except ValueError as exc:
        print(f"buzz-dev-mcp: configuration error: {exc}", file=sys.stderr)
        sys.exit(1)
    setup_logging(level)

    from orchestra.agents.devmcp.workspace import WorkspaceError, create_workspace

    try:
        workspace = create_workspace(dict(os.environ))
    except (WorkspaceError, OSError) as exc:
        log.error("buzz-dev-mcp cannot start: %s", exc)
        sys.exit(1)
    signal.signal(signal.SIGTERM, _exit_on_term)
    try:
        from orchestra.agents.devmcp.server import build_server

        log.info("buzz-dev-mcp serving in %s (scratch %s)", workspace.cwd, workspace.root)
        build_server(workspace).run()
    except KeyboardInterrupt:
        pass
    finally:
        workspace.remove()
