"""The compose stack (orchestrator.md §5.3): up, readiness on 3600, schema, down keeps data."""

from __future__ import annotations

import socket
import stat
import subprocess
import uuid
from pathlib import Path

import asyncpg
import httpx
import pytest
from docker_support import BuiltImages

from orchestra.nostr.keys import Keys
from orchestra.paths import CONTAINER_VENV_BIN
from orchestra.processes import run_command
from orchestra.stack.docker import (
    ENV_FILE_KEYS,
    POSTGRES_HOST_PORT,
    RELAY_HOST_PORT,
    DockerStack,
    docker_stack_services,
    stop_docker_stack,
)
from orchestra.stack.images import ImageBuilder
from orchestra.stack.info import scripts_dir
from orchestra.stack.registry import apply_schema
from orchestra.stack.state import load_state
from orchestra.trial.env.container import TrialContainer

pytestmark = pytest.mark.docker

#: Not the real project name, so a developer's running benchmark stack keeps its volume.
TEST_PROJECT = "buzz-benchmark-pytest"


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _volume_exists(name: str) -> bool:
    result = subprocess.run(
        ["docker", "volume", "inspect", name], capture_output=True, timeout=30, check=False
    )
    return result.returncode == 0


async def _agent_in_container_reaches_the_relay(
    built: BuiltImages, agent_relay_url: str, job_name: str
) -> None:
    """A trial container's `buzz` authenticates at ws://host.docker.internal:3600 (a public URL
    of the relay) and the orchestrator sees the result through ws://localhost:3600."""
    keys = Keys.generate()
    container = await TrialContainer.start(
        built.agent_image, job_name=job_name, trial_id=str(uuid.uuid4()), cpus=1, memory_mb=512
    )
    try:
        name = f"pytest-{uuid.uuid4().hex[:8]}"
        await container.exec(
            [
                str(CONTAINER_VENV_BIN / "buzz"),
                "--relay",
                agent_relay_url,
                "--private-key",
                keys.secret_hex,
                "users",
                "set-profile",
                "--name",
                name,
            ],
            timeout_seconds=60,
        )
    finally:
        await container.remove()
    shown = await run_command(
        [
            str(scripts_dir() / "buzz"),
            "--relay",
            "ws://localhost:3600",
            "--private-key",
            Keys.generate().secret_hex,
            "users",
            "get",
            "--pubkey",
            keys.pubkey,
        ],
        timeout_seconds=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert name in shown.stdout


async def test_stack_up_ready_down_keeps_the_volume(
    built: BuiltImages, tmp_path: Path, job_name: str
) -> None:
    for port in (RELAY_HOST_PORT, POSTGRES_HOST_PORT):
        if not _port_is_free(port):
            pytest.fail(f"port {port} is in use; stop what holds it (a benchmark stack?)")
    state = load_state(built.state.root)
    builder = ImageBuilder(state.paths)  # one builder: one wheelhouse fill, one relay image
    stack = DockerStack(state, builder=builder, project=TEST_PROJECT, fresh=True)
    volume = f"{TEST_PROJECT}_pgdata"
    try:
        info = await stack.start()
        assert (info.relay_ws_url, info.agent_relay_url) == (
            "ws://localhost:3600",
            "ws://host.docker.internal:3600",
        )
        async with httpx.AsyncClient(trust_env=False) as client:
            response = await client.get("http://127.0.0.1:3600/_readiness")
        assert response.status_code == 200

        env_file = state.paths.compose_env
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        env = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
        assert tuple(env) == ENV_FILE_KEYS
        assert env["BUZZ_RELAY_IMAGE"] == await builder.relay_image()
        assert env["POSTGRES_PASSWORD"] == state.postgres_password
        assert env["BUZZ_RELAY_PUBLIC_URLS"] == "ws://localhost:3600,ws://host.docker.internal:3600"

        assert info.database_url is not None
        await apply_schema(info.database_url)
        run_id = uuid.uuid4().hex
        connection = await asyncpg.connect(info.database_url)
        try:
            await connection.execute(
                "INSERT INTO benchmark.trial_manifest"
                " (run_id, trial_id, manifest_hash, task_name, channel_id)"
                " VALUES ($1, 't', 'h', 'n', 'c')",
                run_id,
            )
        finally:
            await connection.close()
        assert await docker_stack_services(state.paths, project=TEST_PROJECT) == {
            "postgres": "running",
            "relay": "running",
        }
        await _agent_in_container_reaches_the_relay(built, info.agent_relay_url, job_name)

        await stop_docker_stack(state.paths, project=TEST_PROJECT)
        assert await docker_stack_services(state.paths, project=TEST_PROJECT) == {}
        assert _port_is_free(RELAY_HOST_PORT)
        assert _volume_exists(volume)

        # the data survives a restart (a second bring-up reuses the volume and the password)
        again = await DockerStack(state, builder=builder, project=TEST_PROJECT).start()
        assert again.database_url is not None
        connection = await asyncpg.connect(again.database_url)
        try:
            count = await connection.fetchval(
                "SELECT count(*) FROM benchmark.trial_manifest WHERE run_id = $1", run_id
            )
        finally:
            await connection.close()
        assert count == 1

        # another clone's state dir (another password) meets this volume: recreated once
        other = load_state(tmp_path / "other-state")
        await stop_docker_stack(state.paths, project=TEST_PROJECT)
        recovered = await DockerStack(other, builder=builder, project=TEST_PROJECT).start()
        assert recovered.database_url is not None
        await apply_schema(recovered.database_url)
        connection = await asyncpg.connect(recovered.database_url)
        try:
            assert await connection.fetchval("SELECT count(*) FROM benchmark.trial_manifest") == 0
        finally:
            await connection.close()
        await stop_docker_stack(other.paths, project=TEST_PROJECT, volumes=True)
    finally:
        await stop_docker_stack(state.paths, project=TEST_PROJECT, volumes=True)
    assert not _volume_exists(volume)
