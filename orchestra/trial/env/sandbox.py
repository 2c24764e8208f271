"""How the local env starts an agent tree: in a bubblewrap sandbox, or as a plain host process
(orchestrator.md §5.8 "local env", §7.9).

**bwrap.** Each agent's `buzz-acp` runs under `bwrap` in its own PID and IPC namespaces and its
own mount namespace. The PID namespace means the tree sees and can signal only its own
processes, and the kernel kills everything in it (whatever detached itself: `setsid`, double
forks) when the tree's program, the namespace's first process, ends; `--die-with-parent` ends
it when the orchestrator dies, by any signal. The file system is a fresh root holding, read-only, the system directories
(`/usr`, `/etc` without its password files, the `/bin`, `/lib` links) and the trees the agent
programs run from (their Python environment and this package's source), then, writable, the
trial's `sandbox/` and the agent's own event log, and its prompt read-only; `/tmp` is private,
`/proc` shows the tree's own processes. Nothing else of the host is there: not the state
directory, the jobs directory, other trials, PostgreSQL's socket, home directories, the
repository or the dataset. Capabilities are dropped and no privilege can be gained (bwrap
sets no_new_privs). The network stays shared: agents reach the relay and the model API.

**none.** Where `bwrap` is missing or cannot make namespaces (user namespaces refused), the tree
is a host process in its own session, tied to the orchestrator (`processes.tied`), and the
stop sweep finds its escaped descendants by their HOME/TMPDIR. Trials record which mode ran
(`sandbox` in result.json) and the run prints one warning line.

**Fork server.** With this package's own programs, the programs of every sandboxed tree are
forked by the orchestrator's fork server (`orchestra.agents.forkserver`, `trial.env.forked`),
which imported them once, inside the tree's namespaces and with its privileges: the sandbox's
first process is a holder that reaps and exits as buzz-acp did, and the console scripts of
buzz-agent, buzz-dev-mcp and `buzz` are covered, inside the sandbox only, by the server's client
script, so each program still starts from its parent by its usual path; buzz-acp and buzz-agent
see that their child's command is the client (`FORK_CLIENT`) and ask the server themselves
(`FORK_SERVER_VARIABLE=0` turns it all off). A `--buzz-bin-dir` and the unsandboxed host processes
run the programs as they are.

This module is the one place an agent tree is started: a launcher wraps whatever command
starts the tree and returns a handle that stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePath, PurePosixPath
from typing import Protocol

from orchestra.agents.forkserver.programs import CLIENT_PROGRAMS
from orchestra.documents.enums import SandboxKind
from orchestra.paths import FORK_CLIENT, FORK_HOLDER, FORK_SERVER_SOCKET
from orchestra.processes import first_of, kill_group, signal_group, stop_group, tied, wait_gone
from orchestra.stack.info import scripts_dir
from orchestra.trial.env.forked import ForkServer, fork_server, start_first
from orchestra.trial.env.programs import program_trees

#: The bwrap program (a name on PATH or a path); empty: never sandbox (a way to test the
#: fallback, and an escape hatch while debugging an agent).
BWRAP_VARIABLE = "ORCHESTRA_BWRAP"
#: `0`: sandboxed trees start their programs without the fork server (plain exec), e.g. to
#: measure what it saves.
FORK_SERVER_VARIABLE = "ORCHESTRA_FORK_SERVER"
SYSTEM_TREES = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: files of /etc no agent needs and every host wants private
MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")
MASKED_TREES = ("/etc/ssh", "/etc/ssl/private")
#: /etc files that may point outside /etc (systemd-resolved's stub)
FOLLOWED_LINKS = ("/etc/resolv.conf",)
PROBE_SECONDS = 10.0
INFO_SECONDS = 10.0
NAMESPACE_END_SECONDS = 10.0  # the kernel's teardown of a namespace whose first process died
HOW_TO_GET_IT = "install bubblewrap (e.g. `apt-get install bubblewrap`)"


@dataclass(frozen=True)
class SandboxSupport:
    """What this machine can do; `problem` says why it cannot sandbox."""

    kind: SandboxKind
    program: str | None = None
    problem: str | None = None

    def warning(self) -> str:
        """The one line a run prints when it cannot sandbox."""
        return (
            f"warning: local-env agents run unsandboxed (sandbox: none): {self.problem}; "
            "they can read the host's files and other trials' processes"
        )


@cache
def sandbox_support() -> SandboxSupport:
    """Whether `bwrap` runs here and can make the namespaces (checked once per process)."""
    configured = os.environ.get(BWRAP_VARIABLE)
    if configured == "":
        return SandboxSupport(SandboxKind.NONE, problem=f"{BWRAP_VARIABLE} is empty")
    program = shutil.which(configured or SandboxKind.BWRAP)
    if program is None:
        missing = configured or SandboxKind.BWRAP
        return SandboxSupport(SandboxKind.NONE, problem=f"{missing} not found; {HOW_TO_GET_IT}")
    probe = [program, *_NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"]
    try:
        result = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as error:
        return SandboxSupport(SandboxKind.NONE, problem=f"{program} failed to run: {error}")
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
        return SandboxSupport(
            SandboxKind.NONE,
            problem=(
                f"{program} cannot create namespaces here ({reason}); allow unprivileged user "
                "namespaces (e.g. `sysctl kernel.unprivileged_userns_clone=1`)"
            ),
        )
    return SandboxSupport(SandboxKind.BWRAP, program=program)


_NAMESPACES = ("--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL")
#: the tree's program is the namespace's first process, so the namespace ends with it
_FIRST = ("--as-pid-1",)


# --- the bwrap command line ---------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxLayout:
    """A job's sandbox file system, apart from what each agent adds (`AgentFiles`)."""

    program_trees: tuple[Path, ...]
    #: never visible, even inside a tree that is (state dir, jobs dir, the database socket)
    hidden: tuple[Path, ...]
    #: (host file, path inside) bound read-only over a file of the program trees
    overlays: tuple[tuple[Path, Path], ...] = ()


@dataclass(frozen=True)
class Mount:
    """A host directory shown at another path inside the sandbox (a Harbor task's `/app`)."""

    source: Path
    target: PurePosixPath
    writable: bool = True


@dataclass(frozen=True)
class AgentFiles:
    """One agent's own part: its trial's sandbox (writable), its working directory, its
    prompt (read-only), its event log and trajectory side file (writable); for a Harbor task
    the task's directories at their container paths (`mounts`, bound in order). `offline`:
    no network at all (a Harbor task's verifier)."""

    writable_tree: Path
    cwd: PurePath
    read_only_files: tuple[Path, ...] = ()
    writable_files: tuple[Path, ...] = ()
    mounts: tuple[Mount, ...] = ()
    offline: bool = False


def bwrap_argv(
    program: str, layout: SandboxLayout, files: AgentFiles, command: Sequence[str], info_fd: int
) -> list[str]:
    argv = [program, *_NAMESPACES, *_FIRST, "--info-fd", str(info_fd)]
    if files.offline:
        argv.append("--unshare-net")
    bound: list[Path] = []
    for system in SYSTEM_TREES:
        path = Path(system)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), system]
        elif path.is_dir():
            argv += ["--ro-bind", system, system]
            bound.append(path)
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for name in MASKED_FILES:
        if Path(name).exists():
            argv += ["--ro-bind", "/dev/null", name]
    for name in MASKED_TREES:
        if Path(name).is_dir():
            argv += ["--tmpfs", name]
    for link in FOLLOWED_LINKS:
        target = Path(os.path.realpath(link))
        if target.exists() and not _inside_any(target, bound):
            argv += ["--ro-bind", str(target), str(target)]
    for tree in _outermost(p for p in layout.program_trees if p.exists()):
        if not _inside_any(tree, bound):
            argv += ["--ro-bind", str(tree), str(tree)]
            bound.append(tree)
    for hidden in layout.hidden:
        if _inside_any(hidden, bound) and hidden.is_dir():
            argv += ["--tmpfs", str(hidden)]
    for source, target in layout.overlays:
        argv += ["--ro-bind", str(source), str(target)]  # (a socket can be connected to)
    argv += ["--bind", str(files.writable_tree), str(files.writable_tree)]
    for path in files.read_only_files:
        argv += ["--ro-bind", str(path), str(path)]
    for path in files.writable_files:
        argv += ["--bind", str(path), str(path)]
    for mount in files.mounts:
        target = Path(mount.target)
        overlaps = [t for t in bound if _inside_any(t, [target]) or _inside_any(target, [t])]
        if overlaps:
            raise OSError(f"{target} cannot be shown in the sandbox: it overlaps {overlaps[0]}")
        argv += ["--bind" if mount.writable else "--ro-bind", str(mount.source), str(target)]
    # the new root itself (where bwrap made the mount points) read-only too: outside the
    # writable binds and /tmp, nothing can be written, even privately
    return [*argv, "--remount-ro", "/", "--chdir", str(files.cwd), "--", *command]


def _inside_any(path: Path, trees: Iterable[Path]) -> bool:
    return any(path == tree or tree in path.parents for tree in trees)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Each path once, without those inside another (absolute, symlinks resolved)."""
    resolved = sorted({Path(os.path.realpath(path)) for path in paths}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not _inside_any(path, kept):
            kept.append(path)
    return kept


def local_launcher(
    support: SandboxSupport,
    buzz_bin_dir: Path | None,
    *,
    hidden: Iterable[Path],
) -> Launcher:
    """The launcher of a local-env job: bwrap where `support` has it, else host processes.
    `hidden`: directories no agent may see even inside a tree it sees (the state and jobs
    directories, the database's socket directory). Trees of this package's own programs start
    through the fork server (unless `FORK_SERVER_VARIABLE` is `0`)."""
    if support.program is None:
        return HostLauncher()
    programs = buzz_bin_dir or scripts_dir()
    trees = program_trees(
        programs, own=buzz_bin_dir is None, agent_path=os.environ.get("PATH", os.defpath)
    )
    hidden_trees = tuple(Path(path).absolute() for path in hidden)
    if buzz_bin_dir is not None or os.environ.get(FORK_SERVER_VARIABLE) == "0":
        return BwrapLauncher(support.program, SandboxLayout(tuple(trees), hidden_trees))
    server = fork_server()
    overlays = [(server.paths.client, programs / name) for name in CLIENT_PROGRAMS]
    overlays += [(server.paths.client, Path(FORK_CLIENT))]  # how the programs know it serves
    overlays += [(server.paths.socket, Path(FORK_SERVER_SOCKET))]
    overlays += [(server.paths.holder, Path(FORK_HOLDER))]
    layout = SandboxLayout(tuple(trees), hidden_trees, tuple(overlays))
    return BwrapLauncher(support.program, layout, server)


# --- starting and stopping one tree -------------------------------------------------------------


class AgentTree(Protocol):
    """A started agent tree; `process` exits with the tree's first program (buzz-acp)."""

    process: asyncio.subprocess.Process

    async def stop(self, *, grace: float, hurry: asyncio.Event | None) -> None:
        """TERM the tree's program, wait up to `grace` (not once `hurry` is set), then KILL
        everything of the tree."""


@dataclass(frozen=True)
class TreeLaunch:
    """One agent tree to start: its first program's argv, the files it may use, its
    environment, and the host files its stdout and stderr go to. (A fork server that starts
    the programs pre-imported would take the same and run inside the launcher's wrapping.)"""

    command: Sequence[str]
    files: AgentFiles
    env: Mapping[str, str]
    stdout: Path
    stderr: Path


class Launcher(Protocol):
    """Starts every agent tree of the local env: the one place that does (§5.8)."""

    kind: SandboxKind  # what result.json records as `sandbox`

    async def start(self, launch: TreeLaunch) -> AgentTree: ...


async def _spawn(
    argv: Sequence[str],
    launch: TreeLaunch,
    *,
    cwd: Path | None = None,
    pass_fds: tuple[int, ...] = (),
    stdin: int = asyncio.subprocess.DEVNULL,
) -> asyncio.subprocess.Process:
    """`argv` in its own session, stdin closed (or `stdin`), output appended to the launch's
    files."""
    with launch.stdout.open("ab") as out, launch.stderr.open("ab") as err:
        return await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(launch.env),
            stdin=stdin,
            stdout=out,
            stderr=err,
            start_new_session=True,
            pass_fds=pass_fds,
        )


@dataclass
class HostTree:
    """A tree started as a host process in its own session: its group is stopped."""

    process: asyncio.subprocess.Process

    async def stop(self, *, grace: float, hurry: asyncio.Event | None) -> None:
        await stop_group(self.process, grace=grace, hurry=hurry)


class HostLauncher:
    """`sandbox: none`."""

    kind = SandboxKind.NONE

    async def start(self, launch: TreeLaunch) -> AgentTree:
        return HostTree(await _spawn(tied(launch.command), launch, cwd=Path(launch.files.cwd)))


@dataclass
class SandboxedTree:
    """A tree in a bwrap sandbox: `process` is bwrap, `program` the namespace's first process
    (`--as-pid-1`: buzz-acp, or the holder that passes signals on to it and exits as it does):
    when it ends, the kernel kills everything else in the namespace, and bwrap exits with its
    status."""

    process: asyncio.subprocess.Process
    program: int

    async def stop(self, *, grace: float, hurry: asyncio.Event | None) -> None:
        # Not bwrap's group: bwrap dies of TERM at once and takes the tree with it, cutting
        # buzz-acp's own orderly stop short. (A first process of a namespace gets the TERM
        # once it handles it: buzz-acp does while it serves.)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.program, signal.SIGTERM)
        try:
            await first_of(wait_gone([self.process.pid]), hurry, grace)
        except asyncio.CancelledError:
            self.kill()
            raise
        # KILL the first process only and wait for bwrap: bwrap exits after it, and the first
        # process finishes exiting only once the kernel has killed and reaped everything else
        # in the namespace. Killing bwrap too would return while detached processes still run
        # for a moment, into the evidence export (§8).
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.program, signal.SIGKILL)
        try:
            async with asyncio.timeout(NAMESPACE_END_SECONDS):
                await self.process.wait()
        except TimeoutError:  # bwrap itself is stuck: take its group
            self.kill()
            await self.process.wait()

    def kill(self) -> None:
        """SIGKILL the namespace's first process: the kernel kills every process in it."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.program, signal.SIGKILL)
            signal_group(self.process.pid, signal.SIGKILL)


@dataclass
class BwrapLauncher:
    """`sandbox: bwrap`, for one job's trials."""

    program: str
    layout: SandboxLayout
    #: starts the tree's programs (its holder is then the sandbox's first process)
    fork: ForkServer | None = None
    kind: SandboxKind = field(default=SandboxKind.BWRAP, init=False)

    async def start(self, launch: TreeLaunch) -> AgentTree:
        for path in launch.files.writable_files:
            path.touch(exist_ok=True)  # a bind mount needs the file to exist
        if self.fork is None or PurePath(launch.command[0]).name not in self.fork.programs:
            # not an agent program (a Harbor task's tests/test.sh): plain exec in the sandbox
            process, first = await self._sandbox(launch, launch.command)
            return SandboxedTree(process, first)
        paths = await self.fork.running()
        ready, ready_writer = os.pipe()
        try:
            command = [str(FORK_HOLDER), str(ready_writer)]
            process, first = await self._sandbox(launch, command, ready_writer, holder=True)
        except BaseException:
            os.close(ready)
            raise
        finally:
            os.close(ready_writer)
        try:
            async with asyncio.timeout(INFO_SECONDS):
                await _read_ready(ready)  # the sandbox is complete
            assert process.stdin is not None
            env, cwd = dict(launch.env), launch.files.cwd
            await start_first(
                paths, first, process.stdin, launch.command, env, cwd, launch.stdout, launch.stderr
            )
        except BaseException:
            await kill_group(process)
            raise
        return SandboxedTree(process, first)

    async def _sandbox(
        self, launch: TreeLaunch, command: Sequence[str], *passed: int, holder: bool = False
    ) -> tuple[asyncio.subprocess.Process, int]:
        """bwrap running `command`, and the host pid of its first process (the fork server's
        holder reads its first program's pid on stdin)."""
        reader, writer = os.pipe()
        stdin = asyncio.subprocess.PIPE if holder else asyncio.subprocess.DEVNULL
        try:
            argv = bwrap_argv(self.program, self.layout, launch.files, command, writer)
            process = await _spawn(argv, launch, pass_fds=(writer, *passed), stdin=stdin)
        finally:
            os.close(writer)
        try:
            async with asyncio.timeout(INFO_SECONDS):
                return process, await _read_info(reader)
        except BaseException:
            await kill_group(process)
            raise


async def _read_info(reader: int) -> int:
    """bwrap's `--info-fd` JSON: the namespace's first process (the tree's program), as the
    host numbers it."""
    async for data in _chunks(reader):
        with contextlib.suppress(ValueError):
            return int(json.loads(data)["child-pid"])
    raise OSError("bwrap exited before it started the sandbox")


async def _read_ready(reader: int) -> None:
    """The holder's `ready` on `reader` (bwrap holds the pipe open too: no EOF to wait for)."""
    async for data in _chunks(reader):
        if data.endswith(b"ready\n"):
            return
    raise OSError("the sandbox's first process did not start")


async def _chunks(reader: int) -> AsyncIterator[bytes]:
    """What arrived on the pipe `reader` so far, after each read (it is closed at the end)."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(reader, "rb", buffering=0)
    )
    try:
        data = b""
        while chunk := await stream.read(4096):
            data += chunk
            yield data
    finally:
        transport.close()
