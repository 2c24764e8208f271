"""Taskstats exit records (bench/taskstats.py) grouped into the processes of one bench-started
tree and classified by what they are in a trial: orchestrator, relay, PostgreSQL, the three
agent programs, `buzz` CLI calls, the agent's shell and its tools, the verifier.

Threads are summed into their process: the records of one tgid with one parent (pid_max is
32,768 here and the shared machine wraps it within minutes, so a tgid alone can name two
processes in one run). A process belongs to the tree when its parent (at its exit) is the tree's
root or a process of the tree: the bench is a child subreaper, so a process whose parent exited
first is reparented to the bench and stays in the tree. Of several processes with the parent's
pid, the parent is the first to exit after the child (a parent outlives its children).
"""

from collections import Counter
from dataclasses import dataclass, field

from taskstats import ExitRecord

DIRECT_KINDS = {
    "orchestra": "orchestrator",
    "buzz-relay": "relay",
    "postgres": "PostgreSQL",
    "pg_ctl": "PostgreSQL",
    "initdb": "PostgreSQL",
    "buzz-acp": "buzz-acp",
    "buzz-agent": "buzz-agent",
    "buzz-dev-mcp": "buzz-dev-mcp",
    "buzz": "buzz CLI",
    "buzz-forkserver": "fork server",
}
KIND_ORDER = (
    "orchestrator",
    "relay",
    "PostgreSQL",
    "buzz-acp",
    "buzz-agent",
    "buzz-dev-mcp",
    "buzz CLI",
    "fork server",
    "agent shell (bash)",
    "agent tools (other commands)",
    "verifier (sh + python3)",
    "other",
)
#: (with a fork server, the programs it forks and their clients carry the programs' names too,
#: so "Python starts" then counts processes of Python programs, not interpreter starts)
PYTHON_COMMS = {
    "orchestra",
    "buzz-relay",
    "buzz",
    "buzz-acp",
    "buzz-agent",
    "buzz-dev-mcp",
    "buzz-forkserver",
}
PYTHON_INTERPRETERS = {"python", "python3", "python3.11", "python3.12", "python3.13"}
SHELLS = {"bash", "sh", "dash"}


@dataclass
class Process:
    tgid: int
    ppid: int
    comm: str
    cpu_us: int = 0
    threads: int = 0
    peak_rss_kib: int = 0
    kind: str = "other"
    first_exit: float = float("inf")  # arrival of its first and last thread's exit record
    last_exit: float = 0.0
    parent: "Process | None" = None
    children: list["Process"] = field(default_factory=list)

    @property
    def is_python(self) -> bool:
        return self.comm in PYTHON_COMMS or self.comm in PYTHON_INTERPRETERS

    def ancestors(self) -> list["Process"]:
        found, node = [], self.parent
        while node is not None and len(found) < 64:
            found.append(node)
            node = node.parent
        return found


def group_processes(records: list[ExitRecord]) -> list[Process]:
    processes: dict[tuple[int, int], Process] = {}
    for record in records:
        key = (record.tgid, record.ppid)
        process = processes.setdefault(key, Process(record.tgid, record.ppid, record.comm))
        process.cpu_us += record.cpu_us
        process.threads += 1
        process.peak_rss_kib = max(process.peak_rss_kib, record.peak_rss_kib)
        process.first_exit = min(process.first_exit, record.exited_at)
        process.last_exit = max(process.last_exit, record.exited_at)
        if record.tid == record.tgid:  # the leader's comm names the process
            process.comm = record.comm
    return list(processes.values())


def tree(records: list[ExitRecord], root_pid: int) -> list[Process]:
    """The processes below `root_pid` (which itself is not among them), classified."""
    # The root's own threads (the bench's samplers) end too.
    processes = [p for p in group_processes(records) if p.tgid != root_pid]
    by_pid: dict[int, list[Process]] = {}
    for process in sorted(processes, key=lambda p: p.last_exit):
        by_pid.setdefault(process.tgid, []).append(process)
    for process in processes:
        candidates = by_pid.get(process.ppid, [])
        process.parent = next(
            (c for c in candidates if c.last_exit >= process.first_exit and c is not process),
            None,
        )
    members = [p for p in processes if [p, *p.ancestors()][-1].ppid == root_pid]
    for process in members:
        if process.parent is not None:
            process.parent.children.append(process)
    for process in members:
        process.kind = classify(process)
    return members


def classify(process: Process) -> str:
    if process.comm in DIRECT_KINDS:
        return DIRECT_KINDS[process.comm]
    above = [ancestor.comm for ancestor in process.ancestors()]
    if "buzz-dev-mcp" in above or "buzz-acp" in above:
        return "agent shell (bash)" if process.comm in SHELLS else "agent tools (other commands)"
    if _is_test_sh(process) or (process.parent is not None and _is_test_sh(process.parent)):
        return "verifier (sh + python3)"
    return "other"


def _is_test_sh(process: Process) -> bool:
    """The local verifier: the orchestrator runs tests/test.sh, which runs python3 verify.py."""
    return (
        process.comm in SHELLS
        and process.parent is not None
        and process.parent.comm == "orchestra"
        and any(child.comm in PYTHON_INTERPRETERS for child in process.children)
    )


@dataclass(frozen=True)
class KindUsage:
    kind: str
    cpu_s: float
    processes: int
    python_starts: int


def usage_by_kind(members: list[Process]) -> list[KindUsage]:
    cpu: Counter[str] = Counter()
    count: Counter[str] = Counter()
    pythons: Counter[str] = Counter()
    for process in members:
        cpu[process.kind] += process.cpu_us
        count[process.kind] += 1
        pythons[process.kind] += process.is_python
    return [
        KindUsage(kind, cpu[kind] / 1e6, count[kind], pythons[kind])
        for kind in KIND_ORDER
        if count[kind]
    ]


def other_commands(members: list[Process], kind: str, top: int = 8) -> list[tuple[str, int, float]]:
    """(comm, processes, CPU seconds) of the commonest commands of one kind."""
    cpu: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for process in members:
        if process.kind == kind:
            cpu[process.comm] += process.cpu_us
            count[process.comm] += 1
    return [(comm, count[comm], cpu[comm] / 1e6) for comm, _ in count.most_common(top)]
