"""The per-trial container: agents' sessions, stopping, network removal, verifier, cleanup."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from asyncio.subprocess import DEVNULL
from collections.abc import AsyncIterator
from pathlib import Path, PurePosixPath

import pytest
from docker_support import TASK_DIR, BuiltImages

from orchestra.config.manifest import EnvironmentOverrides
from orchestra.config.task import load_task
from orchestra.paths import TrialPaths, container_env_file
from orchestra.trial.env.container import (
    TrialContainer,
    cleanup_containers,
    host_gateway_bind_address,
)
from orchestra.trial.env.docker import DockerEnvironment
from orchestra.trial.env.verifiers import InEnvironmentVerifier

pytestmark = pytest.mark.docker

#: Connects to the host's listener through host.docker.internal; prints "connected" or the error.
CONNECT_SCRIPT = """\
import socket, sys
try:
    socket.create_connection(("host.docker.internal", int(sys.argv[1])), timeout=5).close()
    print("connected")
except OSError as error:
    print("failed:", error)
"""


@pytest.fixture
async def container(built: BuiltImages, job_name: str) -> AsyncIterator[TrialContainer]:
    started = await TrialContainer.start(
        built.agent_image, job_name=job_name, trial_id=str(uuid.uuid4()), cpus=1, memory_mb=512
    )
    yield started
    await started.remove()


@pytest.fixture
async def host_listener(docker_engine: None) -> AsyncIterator[int]:
    """A TCP server where containers reach the host (the bridge gateway); yields its port."""

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    address = await host_gateway_bind_address()
    assert address != "127.0.0.1", "a Linux engine's bridge gateway is a host interface"
    server = await asyncio.start_server(accept, host=address, port=0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_disconnected_container_cannot_open_a_tcp_connection(
    container: TrialContainer, host_listener: int
) -> None:
    connect = ["python3", "-c", CONNECT_SCRIPT, str(host_listener)]
    before = await container.exec(connect)
    assert before.stdout.strip() == "connected"  # the check below is meaningful
    assert await container.networks() == ["bridge"]
    assert await container.disconnect_networks() == ["bridge"]
    assert await container.networks() == []
    after = await container.exec(connect)
    assert after.stdout.startswith("failed:"), after.stdout
    interfaces = await container.exec(["ls", "/sys/class/net"])
    assert interfaces.stdout.split() == ["lo"]


async def test_agent_session_reads_its_env_file_and_streams_output(
    container: TrialContainer, tmp_path: Path
) -> None:
    await container.prepare_layout()
    programs = PurePosixPath("/opt/fake-agent")
    fake_acp = tmp_path / "buzz-acp"
    fake_acp.write_text(
        "#!/bin/sh\n"
        'echo "cwd=$(pwd) value=$TRICKY_VALUE"\n'
        'test -e "$ENV_FILE" && echo "env file still there" >&2\n'
        'echo "key-length=${#BUZZ_PRIVATE_KEY}" >&2\n'
        "exit 3\n"
    )
    fake_acp.chmod(0o755)
    await container.copy_in(fake_acp, programs / "buzz-acp")
    secret = "ab" * 32
    env = {
        "BUZZ_PRIVATE_KEY": secret,
        "TRICKY_VALUE": 'it\'s a $HOME `x` "quoted" value',
        "ENV_FILE": str(container_env_file("solo-1")),
    }
    stdout, stderr = tmp_path / "solo-1.stdout.log", tmp_path / "solo-1.stderr.log"
    process = await container.start_agent(
        "solo-1", env, programs_dir=programs, stdout=stdout, stderr=stderr
    )
    assert await process.wait() == 3
    assert stdout.read_text() == f"cwd=/workspace value={env['TRICKY_VALUE']}\n"
    assert stderr.read_text() == "key-length=64\n"


async def _processes(container: TrialContainer) -> int:
    """How many processes `docker top` lists in the container."""
    return await container._process_count()


async def _wait_for_processes(container: TrialContainer, at_least: int) -> None:
    async with asyncio.timeout(10):
        # `docker exec` gives no event when the exec'd command has started: poll `docker top`
        while await _processes(container) < at_least:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_stop_processes_kills_everything_but_pid_1(
    container: TrialContainer, tmp_path: Path
) -> None:
    # a session that ignores TERM and leaves a background child behind
    session = await container.start_session(
        ["sh", "-c", "trap '' TERM; sleep 1000 & wait"],
        stdout=tmp_path / "out.log",
        stderr=tmp_path / "err.log",
    )
    await _wait_for_processes(container, at_least=3)  # sleep infinity, sh, sleep 1000
    await container.stop_processes(grace_seconds=0.5)
    assert await asyncio.wait_for(session.wait(), 10) != 0
    assert await _processes(container) == 1


def _verifier_in(
    container: TrialContainer, built: BuiltImages, job_name: str, tmp_path: Path
) -> InEnvironmentVerifier:
    """The §9.2 verifier in a docker env whose container is `container`."""
    environment = _docker_environment(built, job_name, tmp_path)
    environment.container = container
    return InEnvironmentVerifier(environment, environment.trial)


async def test_verifier_runs_offline_and_copies_outputs_back(
    container: TrialContainer, built: BuiltImages, job_name: str, tmp_path: Path
) -> None:
    await container.prepare_layout()
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    (evidence / "buzz-evidence.json").write_text('{"messages": []}\n')
    await container.copy_in(evidence, PurePosixPath("/logs/artifacts"))
    await container.sh("mkdir -p /logs/verifier && echo stale > /logs/verifier/reward.json")
    tests_dir = tmp_path / "tests"
    tests_dir.mkdir()
    (tests_dir / "test.sh").write_text(
        "#!/bin/sh\nset -eu\n"
        'echo "lang=$LANG user=$(id -u) cwd=$(pwd) net=$(ls /sys/class/net | tr "\\n" " ")"\n'
        "test ! -e /logs/verifier/reward.json\n"
        "python3 -c 'import json; json.load(open(\"/logs/artifacts/buzz-evidence.json\"))'\n"
        "echo '{\"reward\": 1.0}' > /logs/verifier/reward.json\n"
    )  # deliberately not executable: the verifier must chmod it
    verifier = _verifier_in(container, built, job_name, tmp_path)
    trial = verifier.trial
    result = await verifier.execute(tests_dir, timeout_seconds=60)
    assert (result.exit_code, result.timed_out) == (0, False)
    assert trial.test_stdout.read_text() == "lang=C.UTF-8 user=0 cwd=/ net=lo \n"
    assert json.loads(trial.reward_json.read_text()) == {"reward": 1.0}
    assert (trial.artifacts_dir / "buzz-evidence.json").exists()
    assert await container.networks() == []


async def test_verifier_timeout_kills_the_verifier(
    container: TrialContainer, built: BuiltImages, job_name: str, tmp_path: Path
) -> None:
    tests_dir = tmp_path / "tests"
    tests_dir.mkdir()
    (tests_dir / "test.sh").write_text("#!/bin/sh\necho begin\nsleep 600\n")
    verifier = _verifier_in(container, built, job_name, tmp_path)
    result = await verifier.execute(tests_dir, timeout_seconds=1)
    assert (result.exit_code, result.timed_out) == (None, True)
    assert verifier.trial.test_stdout.read_text() == "begin\n"
    assert await _processes(container) == 1


async def test_cleanup_removes_containers_by_job_label(built: BuiltImages, job_name: str) -> None:
    other_job = f"{job_name}-other"
    started = [
        await TrialContainer.start(
            built.task_image, job_name=job, trial_id=str(uuid.uuid4()), cpus=0.5, memory_mb=256
        )
        for job in (job_name, job_name, other_job)
    ]
    try:
        removed = await cleanup_containers(job_name)
        assert removed == sorted(c.name for c in started[:2])
        assert await cleanup_containers(job_name) == []
        assert await cleanup_containers(other_job) == [started[2].name]
    finally:
        for leftover in started:
            with contextlib.suppress(Exception):
                await leftover.remove()


def _docker_environment(
    built: BuiltImages, job_name: str, tmp_path: Path, *, buzz_bin_dir: Path | None = None
) -> DockerEnvironment:
    """A docker env for a trial of the test task on the test agent layer (no container yet)."""
    return DockerEnvironment(
        TrialPaths(tmp_path / "trial"),
        load_task(TASK_DIR),
        image=built.agent_image,
        job_name=job_name,
        trial_id=str(uuid.uuid4()),
        overrides=EnvironmentOverrides(),
        buzz_bin_dir=buzz_bin_dir,
    )


async def test_a_second_interrupt_removes_the_container_at_once(
    built: BuiltImages, job_name: str, tmp_path: Path
) -> None:
    """§7.6: with `hurry` set, step 16 does not TERM, wait and KILL; it removes the container."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # an agent that would outlast the TERM grace period
    (bin_dir / "buzz-acp").write_text("#!/bin/sh\ntrap '' TERM\nsleep 1000 &\nwait\n")
    environment = _docker_environment(built, job_name, tmp_path, buzz_bin_dir=bin_dir)
    await environment.prepare()
    container = environment._container()
    agent = await environment.start_agent(
        "solo-1", {}, stdout=tmp_path / "out.log", stderr=tmp_path / "err.log", on_exit=lambda: None
    )
    await _wait_for_processes(container, at_least=3)  # sleep infinity, sh, sleep 1000
    hurry = asyncio.Event()
    hurry.set()
    notes = await environment.stop_agents(hurry)
    assert notes == [f"container {container.name} removed at once (second interrupt)"]
    assert agent.exit_code is not None
    assert await environment.isolate() == []  # nothing left to detach
    inspect = await asyncio.create_subprocess_exec(
        "docker", "inspect", container.name, stdout=DEVNULL, stderr=DEVNULL
    )
    assert await inspect.wait() != 0  # the container no longer exists


async def test_buzz_bin_dir_programs_come_first_in_the_container(
    built: BuiltImages, job_name: str, tmp_path: Path
) -> None:
    """`--buzz-bin-dir` in the docker env (§7.9): its files at /opt/buzz/bin, 0755, and that
    directory first on the agents' PATH because it holds a `buzz`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "buzz").write_text('#!/bin/sh\necho wrapped buzz "$@"\n')  # mode 0644 here
    (bin_dir / "buzz-acp").write_text("#!/bin/sh\nexit 0\n")
    environment = _docker_environment(built, job_name, tmp_path, buzz_bin_dir=bin_dir)
    try:
        await environment.prepare()
        facts = environment.facts
        assert str(facts.programs_dir) == "/opt/buzz/bin"
        assert facts.agent_path is not None
        assert facts.agent_path.startswith("/opt/buzz/bin:")
        container = environment._container()
        found = await container.sh(f'PATH="{facts.agent_path}" buzz messages get')
        assert found.stdout == "wrapped buzz messages get\n"
        modes = await container.sh("stat -c '%a %n' /opt/buzz/bin/buzz /opt/buzz/bin/buzz-acp")
        assert modes.stdout.split("\n")[:2] == [
            "755 /opt/buzz/bin/buzz",
            "755 /opt/buzz/bin/buzz-acp",
        ]
    finally:
        await environment.close()
