"""The relay process: CLI, shutdown, slow consumers, many connections (protocol.md §1.2, §5.5, §14)."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys

import pytest
import websockets
from websockets.asyncio.client import connect as ws_connect

from orchestra.nostr import wire
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event
from orchestra.relay import connection as connection_module


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith("BUZZ_") and k != "DATABASE_URL"
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestra.relay", *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_migrate_is_idempotent(embedded_pg):
    url = embedded_pg.new_database_url()
    for _ in range(2):
        result = run_cli("migrate", "--database-url", url)
        assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["serve"], {}, "buzz-relay: BUZZ_DATABASE_URL: not set"),
        (
            ["serve", "--bind", "nonsense", "--database-url", "postgresql://x@/y"],
            {},
            "buzz-relay: --bind: expected host:port, got 'nonsense'",
        ),
        (
            ["serve"],
            {"BUZZ_DATABASE_URL": "postgresql://x@/y", "BUZZ_RELAY_MAX_LIMIT": "lots"},
            "buzz-relay: BUZZ_RELAY_MAX_LIMIT: expected an integer, got 'lots'",
        ),
        (
            ["serve"],
            {"BUZZ_DATABASE_URL": "postgresql://x@/y", "BUZZ_RELAY_MAX_CONNECTIONS": "0"},
            "buzz-relay: BUZZ_RELAY_MAX_CONNECTIONS: must be at least 1, got '0'",
        ),
        (
            ["serve"],
            {"BUZZ_DATABASE_URL": "postgresql://x@/y", "BUZZ_RELAY_AUTH_TIMEOUT_SECS": "soon"},
            "buzz-relay: BUZZ_RELAY_AUTH_TIMEOUT_SECS: expected a number, got 'soon'",
        ),
        (
            ["--bind", "nonsense"],
            {"BUZZ_DATABASE_URL": "postgresql://x@/y"},
            "buzz-relay: --bind: expected host:port, got 'nonsense'",
        ),
        (
            ["serve"],
            {"BUZZ_DATABASE_URL": "postgresql://x@/y", "BUZZ_RELAY_PRIVATE_KEY": "secret-oops"},
            "buzz-relay: BUZZ_RELAY_PRIVATE_KEY: not a 64-hex or nsec secret key",
        ),
    ],
)
def test_configuration_errors_are_one_line(args, env, message):
    result = run_cli(*args, env=env)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(message), result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "secret-oops" not in result.stderr


def test_port_in_use_is_a_one_line_error(embedded_pg):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(
            "serve", "--bind", f"127.0.0.1:{port}", "--database-url", embedded_pg.new_database_url()
        )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("buzz-relay: ") and "address already in use" in last
    assert "Traceback" not in result.stderr


async def test_sigterm_closes_sockets_with_1001_and_exits_zero(start_relay):
    relay = start_relay()
    client = await ws_connect(relay.url)
    await client.recv()  # the AUTH challenge
    relay.process.send_signal(signal.SIGTERM)
    with pytest.raises(websockets.ConnectionClosed) as closed:
        async with asyncio.timeout(15):
            await client.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    assert await asyncio.to_thread(relay.process.wait, 15) == 0


async def test_slow_consumer_is_disconnected_others_unaffected(relay_with, connect):
    relay = await relay_with(max_pending_send_bytes=256 * 1024)
    publisher = await connect(relay.url)
    # A reader that stops reading: its client-side queue holds one message.
    slow = await ws_connect(relay.url, max_queue=1, max_size=None)
    challenge = json.loads(await asyncio.wait_for(slow.recv(), 10))[1]
    keys = Keys.generate()
    await slow.send(f'["AUTH",{make_auth_event(keys, relay.url, challenge).raw}]')
    assert json.loads(await slow.recv())[2] is True
    await slow.send('["REQ","flood",{"kinds":[20001]}]')
    healthy = await connect(relay.url)
    await healthy.req("small", {"kinds": [1], "authors": [publisher.keys.pubkey]})
    big = "x" * 90_000
    # Ephemeral events go straight to fan-out: no database work needed to flood the reader.
    for i in range(400):
        await publisher.send(["EVENT", publisher.sign(20001, f"{i}{big}").to_dict()])
        if slow.close_code is not None or slow.protocol.close_rcvd is not None:
            break
    note = await publisher.ok(1, "the relay is fine")
    assert (await healthy.next_event("small"))["id"] == note.id
    with pytest.raises(websockets.ConnectionClosed) as closed:
        async with asyncio.timeout(20):
            while True:
                await slow.recv()
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1008, "slow consumer")


async def test_many_concurrent_connections(start_relay, connect):
    relay = start_relay()
    count = 1000

    async def subscriber(index: int):
        client = await connect(relay.url)
        await client.req("live", {"kinds": [1], "#t": ["crowd"], "limit": 0})
        return client

    clients = []
    for start in range(0, count, 100):
        clients += await asyncio.gather(
            *(subscriber(i) for i in range(start, min(start + 100, count)))
        )
    publisher = await connect(relay.url)
    note = await publisher.ok(1, "to everyone", [["t", "crowd"]])
    received = await asyncio.gather(*(c.next_event("live") for c in clients))
    assert {event["id"] for event in received} == {note.id}
    assert len(relay.log_tail(500).split("Traceback")) == 1


async def test_unexpected_errors_answer_in_the_message_form(relay_with, connect, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("injected fault")

    relay = await relay_with()
    client = await connect(relay.url)
    monkeypatch.setattr(connection_module, "validate_event", explode)
    monkeypatch.setattr(wire, "parse_filter", explode)
    event = client.sign(1, "boom")
    assert await client.publish(event) == [
        "OK",
        event.id,
        False,
        "error: internal error; try again",
    ]
    _, end = await client.req("s", {"limit": 1})
    assert end == ["CLOSED", "s", "error: internal error; try again"]
    monkeypatch.undo()
    await client.ok(1, "the connection still works")
