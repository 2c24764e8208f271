"""The `buzz-relay` entry point: the relay runs on the C library's allocator.

Python's own small-object allocator keeps a 1 MiB arena resident while any object in it lives,
so after a flood of subscriptions or events the relay stayed ~100 MB above its baseline for
good; with `PYTHONMALLOC=malloc` the housekeeping's `malloc_trim` returns it (docs/decisions.md
D16). The variable must be set before the interpreter starts, so the launcher sets it and
re-executes itself once; a value set by the caller is kept.
"""

import os
import sys


def main(module: str | None = None) -> None:
    """Run the relay; `module` when started as `python -m <module>`. The re-executed process
    has the same command line (process supervisors recognise `buzz-relay` in it)."""
    if "PYTHONMALLOC" not in os.environ:
        os.environ["PYTHONMALLOC"] = "malloc"
        program = ["-m", module] if module else [sys.argv[0]]
        try:
            os.execv(sys.executable, [sys.executable, *program, *sys.argv[1:]])
        except OSError:
            pass  # cannot re-execute: run on the default allocator
    from orchestra.relay.cli import main as relay_main

    relay_main()
