"""Start-up accounting inside one Python program, for bench/trial_profile.py.

The profile puts a wrapper script named like each program (`buzz`, `buzz-acp`, `buzz-agent`,
`buzz-dev-mcp`, `orchestra`) first in the programs directory (`--buzz-bin-dir`); the wrapper
imports this module first, and `run()` then calls the program's real console-script entry point.
Recorded per process, in `<log dir>/<pid>.json`: the CPU spent before the wrapper's first line
(interpreter initialization, `site`, the venv's .pth files) and the CPU of every import after
it, exclusive of nested imports and summed by top-level package (what `python -X importtime`
calls self time, as process CPU instead of wall), and the process CPU when the entry point
returned (the rest, up to the exit record, is interpreter finalization). The file is rewritten
whenever an outermost import finishes, since agent processes end by signal or `os._exit`
without exit hooks.
"""

import time

_started_cpu = time.process_time()  # first: what the interpreter cost before this line

import _thread  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

_log_path = ""
_packages: dict[str, float] = {}
_state = _thread._local()


class _Totals:
    imports = 0
    import_cpu_s = 0.0
    returned_cpu_s: float | None = None


def _write() -> None:
    payload = {
        "pid": os.getpid(),
        "program": os.path.basename(sys.argv[0]),
        "startup_cpu_s": _started_cpu,
        "import_cpu_s": _Totals.import_cpu_s,
        "imports": _Totals.imports,
        "returned_cpu_s": _Totals.returned_cpu_s,
        "packages": _packages,
    }
    with open(_log_path, "w", encoding="utf-8") as out:
        json.dump(payload, out)


def _timed(find_and_load):  # type: ignore[no-untyped-def]
    def find_and_load_timed(name, import_):  # type: ignore[no-untyped-def]
        stack = getattr(_state, "stack", None)
        if stack is None:
            stack = _state.stack = []
        if name in sys.modules:
            return find_and_load(name, import_)
        frame = [time.thread_time(), 0.0]
        stack.append(frame)
        try:
            return find_and_load(name, import_)
        finally:
            stack.pop()
            elapsed = time.thread_time() - frame[0]
            package = name.partition(".")[0]
            _packages[package] = _packages.get(package, 0.0) + elapsed - frame[1]
            _Totals.imports += 1
            if stack:
                stack[-1][1] += elapsed
            else:
                _Totals.import_cpu_s += elapsed
                _write()

    return find_and_load_timed


def run(module: str, function: str, log_dir: str) -> None:
    global _log_path
    _log_path = os.path.join(log_dir, f"{os.getpid()}.json")
    import importlib._bootstrap as bootstrap

    bootstrap._find_and_load = _timed(bootstrap._find_and_load)  # type: ignore[attr-defined]
    _write()
    entry = getattr(__import__(module, fromlist=[function]), function)
    try:
        code = entry()
    finally:  # what follows is interpreter finalization (processes ending by os._exit skip it)
        _Totals.returned_cpu_s = time.process_time()
        _write()
    sys.exit(code)
