"""Human-readable stderr log lines in the harness format (agent-harness.md §0.3).

`<RFC 3339 UTC time with milliseconds>Z <LEVEL> <target>: <message>`, never ANSI colours.
The logger name is the target (`buzz_agent`, `llm`, `mcp`, ...).
"""

from __future__ import annotations

import logging
import sys
import time

LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
# Third-party libraries log at INFO about every HTTP request or JSON-RPC frame; only their
# problems belong in an agent's log. The SDK's loggers live under "mcp.*", which is why our own
# target "mcp" is not silenced itself.
_NOISY_LIBRARIES = (
    "httpx",
    "httpcore",
    "mcp.client",
    "mcp.server",
    "mcp.shared",
    "mcp.os",
    "acp",
    "anyio",
    "asyncio",
)


class HarnessFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        seconds = int(record.created)
        millis = int((record.created - seconds) * 1000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        message = record.getMessage()
        if record.exc_info:
            message = f"{message}: {record.exc_info[1]!r}"
        # One line per record: a multi-line message would break line-oriented readers.
        message = message.replace("\r", "\\r").replace("\n", "\\n")
        return f"{stamp}.{millis:03d}Z {record.levelname} {record.name}: {message}"


def setup_logging(level: int) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(HarnessFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in _NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
