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
from typing import overload

AGENT_PROGRAMS = ("buzz-acp", "buzz-agent", "buzz-dev-mcp")
#: With the fork server (orchestra/agents/forkserver) a tree's programs are the server's
#: children inside the tree's sandbox, whose first process is the holder: a tree is then the
#: agent processes of one PID namespace, holder included, and the server (one for all trees) is
#: added to the total of all trees.
FORK_SERVER = "buzz-forkserver"
FORK_HOLDER = "buzz-tree-init"
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
    #: rss, pss by tree (its PID namespace, or its buzz-acp where it has none of its own)
    tree_peaks_kib: dict[int | str, tuple[int, int]] = field(default_factory=dict)
    total_peak_kib: tuple[int, int] = (0, 0)
    #: per process (by pid): its kind (`kind_of`) and peak Pss and Private_Dirty, KiB
    process_peaks_kib: dict[int, tuple[str, int, int]] = field(default_factory=dict)
    #: peak PSS (KiB) of each tree over the samples in which at least `sharing_trees` trees
    #: were complete (every agent program running): a tree's PSS rises at the end of a run as
    #: fewer trees share the server's pages
    shared_peaks_kib: dict[int | str, int] = field(default_factory=dict)
    sharing_trees: int = 5
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
        servers: list[int] = []
        own_namespace = pid_namespace("self")
        for pid in descendants(table, self.root_pid):
            name = table[pid][0]
            if name == FORK_SERVER and pid_namespace(pid) == own_namespace:
                servers.append(pid)  # not its request processes, which enter a sandbox
            elif name in (*AGENT_PROGRAMS, FORK_HOLDER):
                namespace = pid_namespace(pid)
                key = namespace if namespace != own_namespace else acp_ancestor(table, pid)
                if key is not None:
                    trees.setdefault(key, []).append(pid)
        total_rss = total_pss = 0
        for server in servers:
            rss, pss = smaps_rollup(server)
            total_rss, total_pss = total_rss + rss, total_pss + pss
        complete: dict[int | str, int] = {}
        for namespace, pids in trees.items():
            # a namespace's inode number is reused once it has ended: its holder tells trees apart
            holders = [pid for pid in pids if table[pid][0] == FORK_HOLDER]
            key = f"{namespace}:{holders[0]}" if holders else namespace
            usages = [smaps_rollup(pid, private_dirty=True) for pid in pids]
            for pid, (_, pss, dirty) in zip(pids, usages, strict=True):
                kind, peak_pss, peak_dirty = self.process_peaks_kib.get(pid, ("", 0, 0))
                kind = kind or kind_of(table, pid)
                self.process_peaks_kib[pid] = (kind, max(peak_pss, pss), max(peak_dirty, dirty))
            rss, pss = sum(u[0] for u in usages), sum(u[1] for u in usages)
            names = {table[pid][0] for pid in pids}
            if names >= {"buzz-acp", "buzz-agent", "buzz-dev-mcp"}:
                complete[key] = pss
            peak = self.tree_peaks_kib.get(key, (0, 0))
            self.tree_peaks_kib[key] = (max(peak[0], rss), max(peak[1], pss))
            total_rss, total_pss = total_rss + rss, total_pss + pss
        if len(complete) >= self.sharing_trees:
            for key, pss in complete.items():
                self.shared_peaks_kib[key] = max(self.shared_peaks_kib.get(key, 0), pss)
        self.total_peak_kib = (
            max(self.total_peak_kib[0], total_rss),
            max(self.total_peak_kib[1], total_pss),
        )
        self.samples += 1


def kind_of(table: dict[int, tuple[str, int]], pid: int) -> str:
    """The program's name; `… client` for the fork server's client process (it is not the
    server's child), `… forked` for a program the server forked."""
    name, parent = table.get(pid, ("", 0))
    if name in ("buzz-agent", "buzz-dev-mcp", "buzz-acp"):
        forked = table.get(parent, ("", 0))[0] == FORK_SERVER or (
            name == "buzz-acp" and (table.get(parent, ("", 0))[0] == FORK_HOLDER)
        )
        return f"{name} forked" if forked else f"{name} client" if name != "buzz-acp" else name
    return name


def acp_ancestor(table: dict[int, tuple[str, int]], pid: int) -> int | None:
    """The buzz-acp `pid` is (or is below), for trees without a sandbox of their own."""
    node, seen = pid, 0
    while node in table and seen < 64:
        if table[node][0] == "buzz-acp":
            return node
        node, seen = table[node][1], seen + 1
    return None


def pid_namespace(pid: int | str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return ""


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


@overload
def smaps_rollup(pid: int) -> tuple[int, int]: ...
@overload
def smaps_rollup(pid: int, *, private_dirty: bool) -> tuple[int, int, int]: ...
def smaps_rollup(pid: int, *, private_dirty: bool = False) -> tuple[int, ...]:
    """(Rss, Pss) in KiB, and Private_Dirty if asked; zeros when the process is gone."""
    keys = ("Rss", "Pss", "Private_Dirty") if private_dirty else ("Rss", "Pss")
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ESRCH):
            return (0,) * len(keys)
        raise
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in keys:
            values[key] = int(rest.split()[0])
    return tuple(values.get(key, 0) for key in keys)


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
