"""Start-up and exit of the package's programs: the cyclic collector waits for the imports,
and a finished program leaves without interpreter finalization.

Importing the agent SDKs (the pydantic models of ACP and MCP, and what they pull in) creates
50,000-110,000 objects that live as long as the process, and the collector traverses them
again and again while they are being created: 10-20 % of an agent program's start-up CPU
(docs/performance.md, "CPU cuts"). Nothing of that is garbage worth collecting (a few hundred
cyclic objects), so the programs pause the collector until their imports are done and then
move everything allocated so far into the permanent generation (`gc.freeze`), which later
collections no longer traverse. Reference counting frees objects as usual all along.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from typing import NoReturn


def pause_collector() -> None:
    """No cyclic collection until `resume_collector` (a one-shot program may never resume)."""
    gc.disable()


def resume_collector() -> None:
    """Collect as usual again, leaving out what exists now (the imported modules' objects)."""
    gc.freeze()
    gc.enable()


def exit_now(code: int) -> NoReturn:
    """Exit once the process's own shutdown is done, skipping interpreter finalization.

    Tearing down the interpreter (module and object finalization of the SDKs, pydantic, httpx)
    costs 0.15-0.3 s of CPU per process, paid in series by buzz-dev-mcp, buzz-agent and
    buzz-acp at every trial's teardown, and a quarter of a `buzz` call's CPU. Everything that
    must outlive the process is written by then (the event and prompt logs flush every line);
    the std streams and logging handlers are flushed here. Not for error paths that still have
    to print a traceback. Kept free of heavy imports: `buzz --help` exits through it too.
    """
    logging = sys.modules.get("logging")
    if logging is not None:  # a program that never imported logging has no handlers to flush
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
