"""What one `orchestra benchmark` process tree costs: CPU of every process it starts, the stack's
relay and PostgreSQL included (PostgreSQL daemonizes, so it is no child of the orchestrator), and
the agent trees' memory.

CPU, whole tree: the command runs in a cgroup of its own (cgroup v2 `cpu.stat` usage_usec, or
cgroup v1 `cpuacct.usage`) when this process may make one (root); membership is inherited by
every descendant however it detaches. Always measured too: this process is made a child
subreaper, so orphans (the PostgreSQL postmaster once `pg_ctl` exits) are reparented to it and
reaped here, and `RUSAGE_CHILDREN` then holds the whole tree's CPU as well.

Memory: `/proc/<pid>/smaps_rollup` (Rss, Pss) of the three agent processes of every agent tree
(`buzz-acp` and its `buzz-agent` and `buzz-dev-mcp`, orchestrator.md §7.2), summed per tree,
sampled while the command runs; each tree's peak and the peak of all trees together.
"""

import contextlib
import ctypes
import errno
import itertools
import os
import resource
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

AGENT_PROGRAMS = ("buzz-acp", "buzz-agent", "buzz-dev-mcp")
PR_SET_CHILD_SUBREAPER = 36
CGROUP_CANDIDATES = (  # (directory, usage file): v2 unified (hybrid or pure), then v1 cpuacct
    (Path("/sys/fs/cgroup/unified"), "cpu.stat"),
    (Path("/sys/fs/cgroup"), "cpu.stat"),
    (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage"),
)
REAP_DEADLINE_S = 30.0
_names = itertools.count()


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reap_orphans(deadline_s: float = REAP_DEADLINE_S) -> int:
    """Wait for every remaining descendant (reparented to us); returns how many were reaped.
    Polls: waitpid(-1) blocking would also wait for processes that never end."""
    reaped = 0
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            time.sleep(0.05)
        else:
            reaped += 1
    return reaped


class CpuCgroup:
    """A fresh cgroup; `command()` wraps an argv so that it enters it before it execs."""

    def __init__(self, root: Path, usage_file: str) -> None:
        self.path = root / f"buzz-bench-{os.getpid()}-{next(_names)}"
        self.usage_file = usage_file
        self.path.mkdir()

    @property
    def method(self) -> str:
        version = "v2 cpu.stat" if self.usage_file == "cpu.stat" else "v1 cpuacct.usage"
        return f"cgroup {version} ({self.path})"

    @classmethod
    def make(cls) -> "CpuCgroup | None":
        for root, usage_file in CGROUP_CANDIDATES:
            if (root / usage_file).is_file() and os.access(root, os.W_OK):
                with contextlib.suppress(OSError):
                    return cls(root, usage_file)
        return None

    def command(self, argv: list[str]) -> list[str]:
        enter = 'echo $$ > "$0" && exec "$@"'
        return ["/bin/sh", "-c", enter, str(self.path / "cgroup.procs"), *argv]

    def cpu_seconds(self) -> float:
        text = (self.path / self.usage_file).read_text()
        if self.usage_file == "cpuacct.usage":
            return int(text) / 1e9
        usage = dict(line.split() for line in text.splitlines())
        return int(usage["usage_usec"]) / 1e6

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.rmdir()


@dataclass
class MemorySampler:
    """Samples the agent processes below `root_pid` every `interval_s` on a thread."""

    root_pid: int
    interval_s: float
    tree_peaks_kib: dict[int, tuple[int, int]] = field(default_factory=dict)  # acp pid: rss, pss
    total_peak_kib: tuple[int, int] = (0, 0)
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    @contextlib.contextmanager
    def running(self) -> Iterator["MemorySampler"]:
        thread = threading.Thread(target=self._loop, name="memory-sampler", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> None:
        table = process_table()
        trees: dict[int, list[int]] = {}
        for pid in descendants(table, self.root_pid):
            name = table[pid][0]
            if name in AGENT_PROGRAMS:
                acp = pid
                while acp in table and table[acp][0] != "buzz-acp":
                    acp = table[acp][1]
                if acp in table:
                    trees.setdefault(acp, []).append(pid)
        total_rss = total_pss = 0
        for acp, pids in trees.items():
            usages = [smaps_rollup(pid) for pid in pids]
            rss, pss = sum(u[0] for u in usages), sum(u[1] for u in usages)
            peak = self.tree_peaks_kib.get(acp, (0, 0))
            self.tree_peaks_kib[acp] = (max(peak[0], rss), max(peak[1], pss))
            total_rss, total_pss = total_rss + rss, total_pss + pss
        self.total_peak_kib = (
            max(self.total_peak_kib[0], total_rss),
            max(self.total_peak_kib[1], total_pss),
        )
        self.samples += 1


def descendants(table: dict[int, tuple[str, int]], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (_, parent) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            found.append(child)
            todo.append(child)
    return found


def _stat(pid: int) -> tuple[str, int]:
    """(comm, ppid) from /proc/<pid>/stat; ("", 0) when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "", 0
    name_end = text.rindex(")")
    return text[text.index("(") + 1 : name_end], int(text[name_end + 2 :].split()[1])


def process_table() -> dict[int, tuple[str, int]]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            name, parent = _stat(int(entry))
            if name:
                table[int(entry)] = (name, parent)
    return table


def smaps_rollup(pid: int) -> tuple[int, int]:
    """(Rss, Pss) in KiB; (0, 0) when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ESRCH):
            return 0, 0
        raise
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Pss"):
            values[key] = int(rest.split()[0])
    return values.get("Rss", 0), values.get("Pss", 0)


@dataclass(frozen=True)
class TreeRun:
    exit_code: int
    wall_s: float
    cgroup_cpu_s: float | None  # None without a cgroup
    rusage_cpu_s: float  # RUSAGE_CHILDREN delta, orphans reaped
    leftover_pids: list[int]  # still in the cgroup after the command and its orphans ended


def run_tree(
    argv: list[str],
    *,
    cwd: Path,
    stdout_path: Path,
    env: dict[str, str],
    sampler: MemorySampler | None = None,
) -> TreeRun:
    """Run `argv` to completion in a cgroup of its own (when possible), sampling memory."""
    cgroup = CpuCgroup.make()
    command = cgroup.command(argv) if cgroup else argv
    children0 = children_cpu_seconds()
    started = time.perf_counter()
    with stdout_path.open("wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            if sampler is not None:
                sampler.root_pid = process.pid
                with sampler.running():
                    exit_code = process.wait()
            else:
                exit_code = process.wait()
        except KeyboardInterrupt:
            # Ctrl-C reached the whole foreground group: let the orchestrator finish its own
            # interrupt handling (trial teardown, stack stop) before the bench reports and exits.
            process.wait()
            reap_orphans()
            if cgroup is not None:
                cgroup.remove()
            raise
    wall = time.perf_counter() - started
    reap_orphans()
    rusage = children_cpu_seconds() - children0
    if cgroup is None:
        return TreeRun(exit_code, wall, None, rusage, [])
    try:
        return TreeRun(exit_code, wall, cgroup.cpu_seconds(), rusage, cgroup.pids())
    finally:
        cgroup.remove()


def cpu_method() -> str:
    cgroup = CpuCgroup.make()
    if cgroup is None:
        return "RUSAGE_CHILDREN with this process as child subreaper (no cgroup could be made)"
    try:
        return cgroup.method.rsplit(" (", 1)[0] + ", and RUSAGE_CHILDREN (child subreaper)"
    finally:
        cgroup.remove()
