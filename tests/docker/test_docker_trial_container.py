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
from orchestra.config.task import TaskFile, load_task
from orchestra.paths import CONTAINER_WORKSPACE, TrialPaths, container_env_file
from orchestra.processes import run_command
from orchestra.trial.env.container import (
    TrialContainer,
    cleanup_containers,
    host_gateway_bind_address,
)
from orchestra.trial.env.docker import DockerEnvironment
from orchestra.trial.env.verifier_container import verifier_container_name
from orchestra.trial.env.verifiers import ContainerVerifier
from orchestra.verify.inputs import VerifierInputs
from orchestra.verify.reward import VerifierTimeout

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
        "solo-1",
        env,
        programs_dir=programs,
        workdir=CONTAINER_WORKSPACE,
        stdout=stdout,
        stderr=stderr,
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


VERIFIER_TEST_SH = """\
#!/bin/sh
set -u
echo "lang=$LANG user=$(id -u) cwd=$(pwd) home=$HOME net=$(ls /sys/class/net | tr '\\n' ' ')"
echo "hostname=$(cat /etc/hostname)"
test -e /opt/buzz && echo "agent layer present"
ls -A /logs/verifier
echo forged > /tests/verify.py && echo "wrote /tests"
chmod u+w /logs/artifacts/buzz-evidence.json 2>/dev/null && echo "chmod evidence"
python3 -c 'import json; json.load(open("/logs/artifacts/buzz-evidence.json"))' || exit 9
echo '{"reward": 1.0}' > /logs/verifier/reward.json
"""


def _verifier_inputs(test_sh: str) -> VerifierInputs:
    return VerifierInputs.assemble(
        evidence=b'{"messages": []}\n',
        tests=[TaskFile("test.sh", test_sh.encode(), 0o644), TaskFile("verify.py", b"", 0o644)],
        fixture_files=[],
    )


def _container_verifier(
    built: BuiltImages, job_name: str, tmp_path: Path, *, keep: bool
) -> ContainerVerifier:
    return ContainerVerifier(
        TrialPaths(tmp_path / "trial"),
        image=built.task_image,
        job_name=job_name,
        trial_id=str(uuid.uuid4()),
        cpus=1,
        memory_mb=256,
        keep=keep,
    )


async def _inspect(name: str) -> dict:
    result = await run_command(["docker", "inspect", name])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]


async def test_the_verifier_runs_offline_in_a_container_of_its_own(
    built: BuiltImages, job_name: str, tmp_path: Path
) -> None:
    """§9.2: the task image (no agent layer), no network, no capabilities, root, `-w /`,
    `LANG=C.UTF-8`, read-only inputs copied in before it started, a fresh `/logs/verifier`."""
    verifier = _container_verifier(built, job_name, tmp_path, keep=True)
    trial = verifier.trial
    trial.verifier_dir.mkdir(parents=True)
    (trial.verifier_dir / "reward.json").write_text('{"reward": 0.5}')  # stale: removed, logged
    notes: list[str] = []
    run = await verifier.run(_verifier_inputs(VERIFIER_TEST_SH), 60, notes.append)
    assert run.rewards == {"reward": 1.0} and run.network == "none"
    name = verifier_container_name(verifier.trial_id)
    inspected = await _inspect(name)
    hostname = inspected["Config"]["Hostname"]
    assert trial.test_stdout.read_text() == (
        f"lang=C.UTF-8 user=0 cwd=/ home=/root net=lo \nhostname={hostname}\n"
        # root without capabilities can neither write nor chmod the inputs
        "/tests/test.sh: 7: cannot create /tests/verify.py: Permission denied\n"
    )
    assert notes[0] == "removed 1 file(s) found before the verifier ran: verifier/reward.json"
    assert notes[1].startswith(f"verifier container {name} ({inspected['Id'][:12]}) from ")
    host = inspected["HostConfig"]
    assert (host["NetworkMode"], host["CapDrop"], host["SecurityOpt"]) == (
        "none",
        ["ALL"],
        ["no-new-privileges"],
    )
    assert inspected["Config"]["Image"] == built.task_image
    assert inspected["Config"]["Labels"]["buzz-orchestra.role"] == "verifier"
    assert inspected["Config"]["Labels"]["buzz-orchestra.job"] == job_name
    assert sorted(p.name for p in trial.verifier_dir.iterdir()) == [
        "reward.json",
        "test-stdout.txt",
    ]
    assert (trial.verifier_input("/tests/test.sh")).read_text() == VERIFIER_TEST_SH


async def test_the_verifier_container_is_removed_and_a_timeout_kills_it(
    built: BuiltImages, job_name: str, tmp_path: Path
) -> None:
    verifier = _container_verifier(built, job_name, tmp_path, keep=False)
    inputs = _verifier_inputs("#!/bin/sh\necho begin\nsleep 600\n")
    with pytest.raises(VerifierTimeout) as caught:
        await verifier.run(inputs, 1, lambda _note: None)
    assert caught.value.verifier is not None and caught.value.verifier.timed_out is True
    assert verifier.trial.test_stdout.read_text() == "begin\n"
    gone = await run_command(["docker", "inspect", verifier_container_name(verifier.trial_id)])
    assert gone.returncode != 0  # removed


async def test_files_are_read_back_by_the_engine_not_by_a_program_of_the_container(
    container: TrialContainer,
) -> None:
    await container.sh(
        "mkdir -p /data && printf 'pristine' > /data/file && ln -s /data/file /data/link"
        " && head -c 4096 /dev/zero > /data/big"
        # a `cat` and `tar` the agents replaced change nothing: docker cp reads the layer
        " && printf '#!/bin/sh\\necho forged\\n' > /usr/bin/cat && cp /usr/bin/cat /bin/tar"
    )
    assert await container.read_file(PurePosixPath("/data/file"), 100) == b"pristine"
    assert await container.read_file(PurePosixPath("/data/link"), 100) is None
    assert await container.read_file(PurePosixPath("/data/missing"), 100) is None
    assert await container.read_file(PurePosixPath("/data/big"), 100) is None
    assert await container.read_file(PurePosixPath("/data/big"), 4096) == bytes(4096)


async def test_after_the_stop_the_trial_log_names_what_agents_changed_outside_their_dirs(
    built: BuiltImages, job_name: str, tmp_path: Path
) -> None:
    environment = _docker_environment(built, job_name, tmp_path)
    try:
        await environment.prepare()
        placed = tmp_path / "placed.txt"
        placed.write_text("fixture")
        await environment.put_file(placed, PurePosixPath("/root/.claude/placed.txt"))
        container = environment._container()
        await container.sh(
            "echo x > /workspace/notes.txt && echo x > /tmp/scratch"
            " && echo x > /root/.claude/placed.txt"  # the trial compares its content itself
            " && rm -f /usr/local/bin/python3 && cp /bin/true /usr/local/bin/python3 && mkdir -p /tests && echo x > /tests/t"
        )
        notes = await environment.stop_agents(asyncio.Event())
        assert notes == [
            f"agents changed 2 path(s) of container {container.name} ({container.id[:12]}) "
            "outside their directories: /tests/t, /usr/local/bin/python3"
        ]
    finally:
        await environment.close()


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
