"""The fork server (orchestra/agents/forkserver): a real server process serving probe programs
(probe_programs.py) to the real client script, on the host and into a real bwrap sandbox."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from orchestra.agents.forkserver.launch import stub_script
from orchestra.agents.forkserver.programs import CLIENT_PROGRAMS, ENTRY_POINTS
from orchestra.agents.forkserver.server import MAGIC, READY, BadRequest, parse_request
from orchestra.paths import FORK_HOLDER, FORK_SERVER_SOCKET, PROJECT_ROOT
from orchestra.trial.env.forked import ForkServer
from orchestra.trial.env.programs import own_program_trees
from orchestra.trial.env.sandbox import (
    AgentFiles,
    BwrapLauncher,
    SandboxLayout,
    TreeLaunch,
    sandbox_support,
)

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from probe_programs import PROGRAMS  # noqa: E402

WAIT_SECONDS = 20
PROBE_SERVER = [sys.executable, str(HERE / "probe_programs.py")]
needs_bwrap = pytest.mark.skipif(
    sandbox_support().program is None, reason=f"no bwrap here: {sandbox_support().problem}"
)


def write_clients(directory: Path, socket: Path) -> Path:
    directory.mkdir()
    for name in PROGRAMS:
        path = directory / name
        path.write_text(stub_script(sys.executable, str(socket), PROGRAMS))
        path.chmod(0o755)
    return directory


class Server:
    def __init__(self, tmp_path: Path) -> None:
        self.socket = tmp_path / "run" / "socket"
        self.clients = write_clients(tmp_path / "bin", self.socket)
        self.process = subprocess.Popen([*PROBE_SERVER, str(self.socket)], stdout=subprocess.PIPE)
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == READY  # listening

    def client(self, program: str, *args: str, **popen: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen([str(self.clients / program), *args], **popen)  # type: ignore[call-overload]


def started_program(client: subprocess.Popen[bytes]) -> psutil.Process:
    """A `wait` program's process once its TERM handler is in place."""
    assert client.stdout is not None
    return psutil.Process(int(client.stdout.readline().split()[1]))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    started = Server(tmp_path)
    yield started
    if started.process.poll() is None:
        for process in [*psutil.Process(started.process.pid).children(), started.process]:
            process.kill()
    started.process.wait()


def test_the_programs_are_the_console_scripts() -> None:
    scripts = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert {name: scripts[name] for name in ENTRY_POINTS} == ENTRY_POINTS
    assert set(CLIENT_PROGRAMS) < set(ENTRY_POINTS)


PRELOADED = """
from pydantic import BaseModel
from orchestra.agents.devmcp.server import build_server
from orchestra.agents.forkserver.programs import preload

preload()
seen, pending = set(), [BaseModel]
while pending:
    for model in pending.pop().__subclasses__():
        if model not in seen:
            seen.add(model)
            pending.append(model)
print(sum(not model.__pydantic_complete__ for model in seen), build_server.cache_info().currsize)
"""


def test_the_preload_leaves_no_first_use_work_to_the_programs() -> None:
    """Every pydantic model is complete and buzz-dev-mcp's server built (programs.warm)."""
    run = subprocess.run([sys.executable, "-c", PRELOADED], capture_output=True, text=True)
    assert run.stdout.split() == ["0", "1"], run.stderr


def test_a_client_starts_its_program_as_an_exec_would(server: Server, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        client = server.client(
            "report",
            "one",
            "two words",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=workdir,
            env={"PROBE_VALUE": "x=y", "PROBE_EXIT": "0", "PATH": os.defpath},
            preexec_fn=lambda: os.umask(0o027),
        )
        out, _ = client.communicate(b"input text", timeout=WAIT_SECONDS)
    assert client.returncode == 0
    seen = json.loads(out)
    assert seen["argv"] == [str(server.clients / "report"), "one", "two words"]
    assert seen["cwd"] == str(workdir)
    assert seen["env"] == {"PROBE_VALUE": "x=y", "PROBE_EXIT": "0"}
    assert seen["umask"] == 0o027
    assert seen["stdin"] == "input text"
    assert errors.read_text() == "to stderr\n"
    # forked by the server, in a session of its own, with no descriptor of the server's
    # (its parent: the server, or the server's request process until that has exited)
    assert server.process.pid in (seen["ppid"], seen["grandparent"])
    assert seen["pid"] != client.pid
    assert seen["own_session"] and seen["comm"] == "report"
    assert seen["fds"] == [0, 1, 2, 3]  # 3: the listing of /proc/self/fd itself


def test_exit_codes_and_deaths_by_signal_are_relayed(server: Server) -> None:
    failing = server.client(
        "report", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env={"PROBE_EXIT": "7"}
    )
    assert failing.wait(WAIT_SECONDS) == 7
    assert server.client("suicide").wait(WAIT_SECONDS) == -signal.SIGUSR1


def test_signals_to_the_client_reach_its_program(server: Server) -> None:
    client = server.client("wait", stdout=subprocess.PIPE)
    program = started_program(client)
    client.send_signal(signal.SIGTERM)
    assert client.wait(WAIT_SECONDS) == 3  # the program's own exit on TERM
    assert not program.is_running() or program.status() == psutil.STATUS_ZOMBIE


def test_a_killed_client_takes_its_program_with_it(server: Server) -> None:
    client = server.client("wait", stdout=subprocess.PIPE)
    program = started_program(client)
    client.kill()
    client.wait()
    program.wait(WAIT_SECONDS)  # killed and reaped by the server


def test_term_ends_the_server_and_every_program(server: Server) -> None:
    clients = [server.client("wait", stdout=subprocess.PIPE) for _ in range(2)]
    programs = [started_program(client) for client in clients]
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(WAIT_SECONDS) == 0
    psutil.wait_procs(programs, timeout=WAIT_SECONDS)
    assert [client.wait(WAIT_SECONDS) for client in clients] == [1, 1]  # no status to relay
    assert not server.socket.exists()


def test_without_a_server_the_client_runs_the_program_itself(tmp_path: Path) -> None:
    clients = write_clients(tmp_path / "bin", tmp_path / "no-server")
    env = {"PYTHONPATH": str(HERE), "PROBE_EXIT": "5", "PATH": os.defpath}
    client = subprocess.Popen(
        [str(clients / "report"), "arg"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    out, _ = client.communicate(timeout=WAIT_SECONDS)
    seen = json.loads(out)
    assert client.returncode == 5
    assert seen["pid"] == client.pid and seen["argv"] == [str(clients / "report"), "arg"]


def test_bad_requests_are_refused() -> None:
    def payload(*fields: bytes) -> bytes:
        return b"\0".join(fields)

    good = payload(MAGIC, b"report", b"/", b"18", b"0", b"1", b"/bin/report", b"A=1")
    assert parse_request(good, [5, 6, 7], PROGRAMS).argv == ["/bin/report"]
    for bad, fds in (
        (payload(b"other/1", *good.split(b"\0")[1:]), [5, 6, 7]),
        (good.replace(b"report", b"python", 1), [5, 6, 7]),
        (good, [5]),
        (payload(MAGIC, b"report", b"/", b"18", b"0", b"3", b"/bin/report"), [5, 6, 7]),
    ):
        with pytest.raises(BadRequest):
            parse_request(bad, fds, PROGRAMS)


def bwrap_status() -> dict[str, str]:
    """Capabilities and no_new_privs of a process bwrap starts in its sandbox (the reference)."""
    program = sandbox_support().program
    assert program is not None
    sandbox = ["--unshare-pid", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--proc", "/proc"]
    status = subprocess.run(
        [program, *sandbox, "--", "cat", "/proc/self/status"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(
        line.split(":\t", 1) for line in status.splitlines() if line.startswith(("Cap", "NoNew"))
    )


def client_inside(pid: int, client: Path) -> subprocess.Popen[bytes]:
    """`client` run in the namespaces of `pid` (as a process of its sandbox would run it)."""
    nsenter = ["nsenter", "-t", str(pid), "-m", "-p", "-i", str(client)]
    return subprocess.Popen(nsenter, stdout=subprocess.PIPE)


@needs_bwrap
async def test_programs_run_in_the_trees_sandbox_with_its_privileges(tmp_path: Path) -> None:
    """The launcher's holder is the sandbox's first process and the first program its child;
    it and a program its client asks for are forked into the sandbox's namespaces with bwrap's
    privileges; the tree ends as its first program did; a crashed server leaves no process."""
    fork = ForkServer(command=lambda socket: [*PROBE_SERVER, str(socket)], programs=PROGRAMS)
    try:
        paths = await fork.running()
        clients = write_clients(tmp_path / "bin", Path(FORK_SERVER_SOCKET))
        layout = SandboxLayout(
            (*own_program_trees(), HERE, clients),
            hidden=(),
            overlays=((paths.socket, Path(FORK_SERVER_SOCKET)), (paths.holder, Path(FORK_HOLDER))),
        )
        launcher = BwrapLauncher(str(sandbox_support().program), layout, fork)
        files = AgentFiles(writable_tree=tmp_path, cwd=tmp_path)
        out, err = tmp_path / "out.log", tmp_path / "err.log"
        env = {"PROBE_EXIT": "4", "PATH": os.defpath}
        tree = await launcher.start(TreeLaunch([str(clients / "report")], files, env, out, err))
        assert await asyncio.wait_for(tree.process.wait(), WAIT_SECONDS) == 4
        seen = json.loads(out.read_text())
        assert seen["pid"] > 1  # the holder is 1, and exited as its child did
        assert seen["namespace"] != os.readlink("/proc/self/ns/pid")
        assert seen["status"] == bwrap_status()
        await tree.stop(grace=1.0, hurry=None)

        out.write_text("")
        tree = await launcher.start(TreeLaunch([str(clients / "wait")], files, env, out, err))
        client = client_inside(tree.program, clients / "wait")  # asks for a second program
        assert client.stdout is not None and client.stdout.readline().startswith(b"waiting")
        assert fork.pid is not None
        holder, server = psutil.Process(tree.program), psutil.Process(fork.pid)
        programs = [*holder.children(), *server.children()]
        assert [p.name() for p in programs] == ["wait", "wait"]
        os.kill(fork.pid, signal.SIGKILL)  # the server crashes
        await tree.stop(grace=5.0, hurry=None)  # TERM, then the namespace ends
        psutil.wait_procs(programs, timeout=WAIT_SECONDS)
        # the server gone, it ends at once (1) or with its namespace (killed)
        assert client.wait(WAIT_SECONDS) in (1, -signal.SIGKILL)
    finally:
        fork.close()
