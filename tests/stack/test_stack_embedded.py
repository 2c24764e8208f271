"""The embedded stack: state secrets, pgserver + relay child, readiness, reuse, busy port (§5.2, §5.4)."""

import json
import os
import signal
import socket
import stat
from pathlib import Path

import asyncpg
import pytest

from orchestra.processes import alive
from orchestra.stack.embedded import EmbeddedStack, running_relay_pid, stop_embedded
from orchestra.stack.readiness import StackError, probe_relay
from orchestra.stack.registry import Registry, apply_schema
from orchestra.stack.state import STATE_KEYS, StateError, load_state

pytestmark = pytest.mark.slow


def test_state_file_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    state = load_state(tmp_path / "state")
    file = tmp_path / "state" / "state.json"
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    data = json.loads(file.read_text())
    assert set(data) == set(STATE_KEYS)
    again = load_state(tmp_path / "state")
    assert again.user.pubkey == state.user.pubkey and again.owner.pubkey == state.owner.pubkey
    assert state.user.secret_hex not in repr(state)
    file.write_text(json.dumps({**data, "extra": 1}))
    with pytest.raises(StateError, match="exactly the keys"):
        load_state(tmp_path / "state")


def test_missing_state_is_an_error_when_not_creating(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="missing"):
        load_state(tmp_path / "nothing", create=False)


async def test_embedded_stack_lifecycle(pg_dir: Path, free_port: int) -> None:
    state = load_state(pg_dir / "state")
    port = free_port
    stack = EmbeddedStack(state, port)
    info = await stack.start()
    try:
        assert info.mode == "embedded"
        assert info.relay_ws_url == info.agent_relay_url == f"ws://localhost:{port}"
        assert info.config_record().database is True
        assert await probe_relay(info.relay_http_url)
        assert state.paths.relay_pid.read_text().strip().isdigit()
        assert "listening" in state.paths.relay_log.read_text()
        assert info.database_url is not None
        await apply_schema(info.database_url)
        await apply_schema(info.database_url)  # idempotent
        registry = Registry(info.database_url)
        await registry.open()
        await registry.record_trial(
            run_id="job", trial_id="t1", manifest_hash="h", task_name="x", channel_id="c"
        )
        await registry.mark_archived(run_id="job", trial_id="t1")
        await registry.close()
        connection = await asyncpg.connect(info.database_url)
        row = await connection.fetchrow("SELECT * FROM benchmark.trial_manifest")
        await connection.close()
        assert row["channel_id"] == "c" and row["archived_at"] is not None

        # a second command against the same state dir reuses the running relay
        reuse = EmbeddedStack(state, port)
        await reuse.start()
        assert reuse.reused
        await reuse.stop()  # leaves the stack of the first command running
        assert await probe_relay(info.relay_http_url)
    finally:
        await stack.stop()
    assert not await probe_relay(info.relay_http_url)
    assert not state.paths.relay_pid.exists()
    assert await stop_embedded(state) == []


async def test_busy_port_names_the_holder(pg_dir: Path) -> None:
    state = load_state(pg_dir / "state")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(StackError) as caught:
            await EmbeddedStack(state, port).preflight()
    message = str(caught.value)
    assert message.startswith(f"127.0.0.1:{port} is in use by ")
    assert "(pid " in message and message.endswith("choose another port with --relay-port")


async def test_secrets_stay_private_and_postgres_wants_the_state_files_password(
    pg_dir: Path, free_port: int
) -> None:
    """§5.2: the state dir and what holds secrets stay 0700/0600 (also as root, where
    PostgreSQL must not run as root); every connection needs the password, which only the
    state file holds."""
    state = load_state(pg_dir / "state")
    stack = EmbeddedStack(state, free_port)
    info = await stack.start()
    try:
        for directory in (state.paths.root, state.paths.embedded, state.paths.embedded_pg):
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
        for file in (state.paths.state_json, state.paths.relay_log):
            assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
        assert info.database_url is not None and state.postgres_password in info.database_url
        socket_dir = stack.postgres.socket_dir
        for password in ("", "postgres", "wrong"):
            with pytest.raises(asyncpg.InvalidPasswordError):
                await asyncpg.connect(
                    f"postgresql://postgres:{password}@/postgres?host={socket_dir}"
                )
        connection = await asyncpg.connect(info.database_url)
        assert await connection.fetchval("SELECT 1") == 1
        await connection.close()
    finally:
        await stack.stop()


async def test_a_stack_whose_owner_died_is_reaped_before_a_new_start(
    pg_dir: Path, free_port: int
) -> None:
    """A relay and PostgreSQL left by a command that died (its pid in owner.lock, the lock
    free) are stopped by the next start, which then runs the stack as its own."""
    state = load_state(pg_dir / "state")
    leftover = EmbeddedStack(state, free_port, detached=True)  # nothing tied to this process
    await leftover.start()
    old_relay, old_postgres = running_relay_pid(state.paths), leftover.postgres.pid
    assert old_relay is not None and old_postgres is not None
    state.paths.embedded_owner.write_text("999999999\n")  # its owner died
    stack = EmbeddedStack(state, free_port)
    try:
        await stack.start()
        assert not stack.reused
        assert stack.reaped == [
            f"stopped buzz-relay (pid {old_relay})",
            "stopped embedded PostgreSQL",
        ]
        assert not alive(old_relay) and not alive(old_postgres)
        assert running_relay_pid(state.paths) not in (None, old_relay)
        assert state.paths.embedded_owner.read_text().strip() == str(os.getpid())
    finally:
        await stack.stop()
    assert state.paths.embedded_owner.read_text() == ""


async def test_restart_brings_a_killed_relay_back(pg_dir: Path, free_port: int) -> None:
    state = load_state(pg_dir / "state")
    stack = EmbeddedStack(state, free_port)
    info = await stack.start()
    try:
        [relay] = [pid for pid, name in stack.processes().items() if name == "buzz-relay"]
        os.kill(relay, signal.SIGKILL)
        await stack.restart()
        assert await probe_relay(info.relay_http_url)
        assert running_relay_pid(state.paths) not in (None, relay)
        assert stack.info == info  # the same URLs and password after a restart
    finally:
        await stack.stop()
