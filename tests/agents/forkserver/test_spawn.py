"""A parent that asks the fork server for its child itself (orchestra/agents/forkserver/spawn.py),
as buzz-acp does for buzz-agent and buzz-agent for buzz-dev-mcp: a real probe server
(probe_programs.py) on the host, real programs, real parent processes."""

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from agent_support import held_mcp_client
from mcp import Client

from orchestra.agents.acp.proctree import start_agent_process
from orchestra.agents.agent.mcp_stdio import forked_stdio
from orchestra.agents.forkserver.launch import stub_script
from orchestra.agents.forkserver.server import READY
from orchestra.agents.forkserver.spawn import ForkedProcess, served, start_served

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from probe_programs import PROGRAMS  # noqa: E402

WAIT_SECONDS = 20


class Server:
    """The probe server, and a directory whose programs are links to its client script."""

    def __init__(self, tmp_path: Path) -> None:
        self.socket = tmp_path / "run" / "socket"
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.client = tmp_path / "client"
        self.client.write_text(stub_script(sys.executable, str(self.socket), PROGRAMS))
        self.client.chmod(0o755)
        for name in PROGRAMS:
            (self.bin / name).symlink_to(self.client)
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "probe_programs.py"), str(self.socket)],
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == READY

    def forked(self, pid: int) -> bool:
        """`pid` is the server's (its child, or its request process's until that exits)."""
        return pid in {child.pid for child in psutil.Process(self.process.pid).children(True)}

    def env(self, **variables: str) -> dict[str, str]:
        return {"PATH": f"{self.bin}:{os.defpath}", **variables}

    async def start(self, program: str, *args: str, **env: str) -> ForkedProcess:
        process = await start_served(
            program,
            args,
            env=self.env(**env),
            cwd=self.bin.parent,
            socket_path=self.socket,
            client=self.client,
            programs=PROGRAMS,
        )
        assert process is not None
        return process


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    started = Server(tmp_path)
    yield started
    for process in [*psutil.Process(started.process.pid).children(), started.process]:
        process.kill()
    started.process.wait()


async def test_the_parent_talks_to_its_forked_child_over_stdio(server: Server) -> None:
    children = {child.pid for child in psutil.Process().children()}  # the server among them
    process = await server.start("report", "one", "two words", PROBE_VALUE="x")
    process.stdin.write(b"input text")
    process.stdin.close()
    out = await asyncio.wait_for(process.stdout.read(), WAIT_SECONDS)
    assert await asyncio.wait_for(process.wait(), WAIT_SECONDS) == 0
    seen = json.loads(out)
    assert seen["argv"] == [str(server.bin / "report"), "one", "two words"]
    assert seen["stdin"] == "input text" and seen["env"]["PROBE_VALUE"] == "x"
    assert seen["cwd"] == str(server.bin.parent) and seen["own_session"]
    # the program itself, forked by the server; the parent holds no process in between
    assert seen["pid"] == process.pid
    assert server.process.pid in (seen["ppid"], seen["grandparent"])
    assert {child.pid for child in psutil.Process().children()} <= children


async def test_exit_codes_and_deaths_by_signal_are_reported_as_a_subprocess_would(
    server: Server,
) -> None:
    failing = await server.start("report", PROBE_EXIT="7")
    failing.stdin.close()
    assert await asyncio.wait_for(failing.wait(), WAIT_SECONDS) == 7
    assert failing.returncode == 7
    suicide = await server.start("suicide")
    assert await asyncio.wait_for(suicide.wait(), WAIT_SECONDS) == -signal.SIGUSR1
    killed = await server.start("wait")
    assert (await killed.stdout.readline()).startswith(b"waiting")
    killed.kill()
    assert await asyncio.wait_for(killed.wait(), WAIT_SECONDS) == -signal.SIGKILL


async def test_signals_reach_the_program(server: Server) -> None:
    process = await server.start("wait")
    assert (await process.stdout.readline()).startswith(b"waiting")
    process.terminate()
    assert await asyncio.wait_for(process.wait(), WAIT_SECONDS) == 3  # its own exit on TERM
    process.send_signal(signal.SIGTERM)  # after the exit: nothing is signalled


PARENT = """
import asyncio, sys
from pathlib import Path
sys.path.insert(0, {here!r})
from probe_programs import PROGRAMS
from orchestra.agents.forkserver.spawn import start_served

async def main():
    process = await start_served("wait", [], env={env!r}, socket_path=Path({socket!r}),
                                 client=Path({client!r}), programs=PROGRAMS)
    print((await process.stdout.readline()).decode().split()[1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def test_the_program_is_killed_when_its_parent_dies(server: Server) -> None:
    code = PARENT.format(
        here=str(HERE),
        env=server.env(),
        socket=str(server.socket),
        client=str(server.client),
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    program = psutil.Process(pid)
    assert server.forked(pid)
    parent.kill()
    parent.wait()
    program.wait(WAIT_SECONDS)  # killed and reaped by the server


async def test_without_a_server_serving_it_the_parent_starts_a_subprocess(
    server: Server, tmp_path: Path
) -> None:
    plain = tmp_path / "plain" / "report"
    plain.parent.mkdir()
    plain.write_text("#!/bin/sh\nexit 0\n")
    plain.chmod(0o755)
    env = server.env()
    common: dict[str, Any] = {"client": server.client, "programs": PROGRAMS}
    assert served("report", env, **common) == str(server.bin / "report")
    assert served(str(plain), env, **common) is None  # not the client
    assert served("report", env, client=tmp_path / "missing", programs=PROGRAMS) is None
    assert served("report", env, client=server.client) is None  # not a program it serves
    assert served("missing", env, **common) is None
    # the server unreachable, or refusing (a program it does not know): no descriptor is left
    open_fds = len(os.listdir("/proc/self/fd"))
    nowhere = tmp_path / "nowhere"
    kwargs: dict[str, Any] = {"env": env, "socket_path": nowhere, **common}
    assert await start_served("report", [], **kwargs) is None
    unknown = server.bin / "unknown"
    unknown.symlink_to(server.client)
    kwargs = {"env": env, "socket_path": server.socket, "client": server.client}
    assert await start_served("unknown", [], programs=[*PROGRAMS, "unknown"], **kwargs) is None
    assert len(os.listdir("/proc/self/fd")) == open_fds
    # buzz-acp outside a sandbox with a fork server: its agent is a plain subprocess
    process = await start_agent_process("true", [], str(tmp_path))
    assert isinstance(process, asyncio.subprocess.Process)
    assert await process.wait() == 0


@pytest.fixture
async def forked_mcp(server: Server, tmp_path: Path) -> AsyncIterator[Any]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {"TMPDIR": str(tmp_path), "BUZZ_PRIVATE_KEY": "a" * 64, "HOME": str(tmp_path)}
    process = await server.start("buzz-dev-mcp", **env)
    async with held_mcp_client(forked_stdio(process), WAIT_SECONDS) as client:
        yield client, process


async def test_an_mcp_session_with_a_forked_server(forked_mcp: Any, server: Server) -> None:
    client, process = forked_mcp
    assert server.forked(process.pid)
    tools = await client.list_tools()
    assert "shell" in {tool.name for tool in tools.tools}
    result = await client.call_tool("shell", {"command": "echo forked"})
    assert "forked" in "".join(block.text for block in result.content)


async def test_the_mcp_transport_ends_its_server(server: Server, tmp_path: Path) -> None:
    env = {"TMPDIR": str(tmp_path), "BUZZ_PRIVATE_KEY": "a" * 64, "HOME": str(tmp_path)}
    process = await server.start("buzz-dev-mcp", **env)
    async with Client(forked_stdio(process)) as client:
        await client.list_tools()
    assert process.returncode is not None  # it exited on its stdin's EOF
    with pytest.raises(psutil.NoSuchProcess):
        psutil.Process(process.pid).status()


async def test_a_server_gone_before_its_program_ends_is_reported_as_a_client_did(
    server: Server,
) -> None:
    process = await server.start("wait")
    assert (await process.stdout.readline()).startswith(b"waiting")
    program = psutil.Process(process.pid)
    server.process.kill()  # its orchestrator ending
    assert await asyncio.wait_for(process.wait(), WAIT_SECONDS) == 1
    program.wait(WAIT_SECONDS)  # and the program is ended with it
