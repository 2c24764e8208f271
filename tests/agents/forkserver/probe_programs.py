"""Programs for the fork server's tests, and (run as a script) a fork server that serves them:

    python probe_programs.py SOCKET

`report` prints what it was started with as one JSON line, `wait` reports that its TERM handler
is in place and waits for TERM (then exits 3), `suicide` dies of SIGUSR1; `buzz-dev-mcp` is the
real one."""

import json
import os
import signal
import sys
import time

PROGRAMS = {name: f"probe_programs:{name}" for name in ("report", "wait", "suicide")}
PROGRAMS["buzz-dev-mcp"] = "orchestra.agents.devmcp.cli:main"  # a real MCP server


def report() -> int:
    fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
    print("to stderr", file=sys.stderr)
    print(
        json.dumps(
            {
                "argv": sys.argv,
                "cwd": os.getcwd(),
                "env": {k: v for k, v in os.environ.items() if k.startswith("PROBE_")},
                "umask": os.umask(0),
                "stdin": sys.stdin.read(),
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "grandparent": _parent_of(os.getppid()),
                "own_session": os.getsid(0) == os.getpid(),
                "fds": fds,
                "comm": open("/proc/self/comm").read().strip(),
                "status": dict(
                    line.split(":\t", 1)
                    for line in open("/proc/self/status").read().splitlines()
                    if line.startswith(("Cap", "NoNewPrivs"))
                ),
                "namespace": os.readlink("/proc/self/ns/pid"),
            }
        )
    )
    return int(os.environ.get("PROBE_EXIT", "0"))


def _parent_of(pid: int) -> int:
    """(0 when it is gone)"""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rpartition(")")[2].split()[1])
    except OSError:
        return 0


def wait() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    print(f"waiting {os.getpid()}", flush=True)
    while True:
        time.sleep(60)


def suicide() -> None:
    os.kill(os.getpid(), signal.SIGUSR1)


if __name__ == "__main__":
    from pathlib import Path

    from orchestra.agents.forkserver.server import READY, ForkServer

    server = ForkServer(Path(sys.argv[1]), PROGRAMS)
    server.listen()
    os.write(1, READY)
    server.serve()
    os._exit(0)
