"""Start-up of the package's programs: the cyclic garbage collector waits for the imports.

Importing the agent SDKs (the pydantic models of ACP and MCP, and what they pull in) creates
50,000-110,000 objects that live as long as the process, and the collector traverses them
again and again while they are being created: 10-20 % of an agent program's start-up CPU
(docs/performance.md, "CPU cuts"). Nothing of that is garbage worth collecting (a few hundred
cyclic objects), so the programs pause the collector until their imports are done and then
move everything allocated so far into the permanent generation (`gc.freeze`), which later
collections no longer traverse. Reference counting frees objects as usual all along.
"""

from __future__ import annotations

import gc


def pause_collector() -> None:
    """No cyclic collection until `resume_collector` (a one-shot program may never resume)."""
    gc.disable()


def resume_collector() -> None:
    """Collect as usual again, leaving out what exists now (the imported modules' objects)."""
    gc.freeze()
    gc.enable()
