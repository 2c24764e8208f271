"""`buzz-dev-mcp` entry point: stdio MCP server; never writes anything but protocol to stdout."""

from __future__ import annotations

import logging
import os
import signal
import sys

log = logging.getLogger("mcp")


_terminating = False


def _exit_on_term(signum: int, _frame: object) -> None:
    # Turn SIGTERM into a normal exit so the scratch directory is removed. Only once: a second
    # TERM (the MCP client's and buzz-acp's tree-wide one can both come) would otherwise
    # interrupt that very clean-up; a process that overstays is KILLed by them anyway.
    global _terminating
    if not _terminating:
        _terminating = True
        raise SystemExit(128 + signum)


def _stop_code(error: BaseException) -> int | None:
    """The exit code for a stop by signal (possibly wrapped by the server's task group)."""
    if isinstance(error, BaseExceptionGroup):
        codes = [_stop_code(inner) for inner in error.exceptions]
        return None if None in codes else codes[0]
    if isinstance(error, SystemExit):
        return error.code if isinstance(error.code, int) else 1
    return 0 if isinstance(error, KeyboardInterrupt) else None


def main() -> None:
    from orchestra.startup import pause_collector, resume_collector

    pause_collector()  # until the MCP SDK is imported (orchestra/startup.py)
    from orchestra.agents.logs import LOG_LEVELS, setup_logging
    from orchestra.settings import Setting, SettingError, choice

    log_level = Setting("BUZZ_DEV_MCP_LOG_LEVEL", choice(*LOG_LEVELS, any_case=True), "info")
    try:
        setup_logging(LOG_LEVELS[log_level.value(os.environ)])
    except SettingError as exc:
        print(f"buzz-dev-mcp: configuration error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)

    from orchestra.agents.devmcp.workspace import WorkspaceError, create_workspace

    try:
        workspace = create_workspace(dict(os.environ))
    except (WorkspaceError, OSError) as exc:
        log.error("buzz-dev-mcp cannot start: %s", exc)
        sys.exit(1)
    signal.signal(signal.SIGTERM, _exit_on_term)
    code = 0
    try:
        from orchestra.agents.devmcp.server import serve

        resume_collector()
        log.info("buzz-dev-mcp serving in %s (scratch %s)", workspace.cwd, workspace.root)
        serve(workspace)
    except BaseException as error:
        stop = _stop_code(error)
        if stop is None:
            raise
        code = stop
    finally:
        workspace.remove()
    from orchestra.startup import exit_now

    exit_now(code)
