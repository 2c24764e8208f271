"""NIP-11, health endpoints, CLI start-up with an embedded database (protocol.md §1)."""

import asyncio
import socket
import subprocess
import sys
import time

import httpx
import websockets

from orchestra.relay.embedded_db import EmbeddedPostgres

# The limits of protocol.md §13 added against hostile load, with their defaults.
HOSTILE_LOAD_LIMITS = {
    "auth_timeout_seconds": 60.0,
    "max_connections": 4096,
    "max_connections_per_ip": 1024,
    "max_events_per_second": 1000,
    "max_event_bytes_per_second": 4 * 1024 * 1024,
    "max_pending_send_bytes": 8 * 1024 * 1024,
    "max_pending_send_bytes_total": 128 * 1024 * 1024,
    "max_pending_write_bytes": 64 * 1024,
    "max_pending_reqs": 16,
    "max_filter_values_per_connection": 100_000,
}


def http_base(relay_url: str) -> str:
    return relay_url.replace("ws://", "http://", 1)


def test_nip11_document_with_cors(relay_url):
    response = httpx.get(http_base(relay_url) + "/", headers={"Accept": "application/nostr+json"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/nostr+json"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["access-control-allow-headers"] == "*"
    assert response.headers["access-control-allow-methods"] == "GET"
    doc = response.json()
    assert doc["supported_nips"] == [1, 10, 11, 29, 42, 70]
    assert doc["self"] == doc["pubkey"] and len(doc["self"]) == 64
    assert doc["software"] == "buzz-testbed-relay"
    assert doc["limitation"]["max_limit"] == 500
    assert doc["limitation"]["auth_required"] is True
    assert doc["buzz"]["state_kinds"] == [39000, 39001, 39002]
    assert {key: doc["buzz"][key] for key in HOSTILE_LOAD_LIMITS} == HOSTILE_LOAD_LIMITS


def test_plain_get_health_and_404(relay_url):
    base = http_base(relay_url)
    banner = httpx.get(base + "/")
    assert banner.status_code == 200 and banner.text.startswith("Buzz relay.")
    assert httpx.get(base + "/_readiness").json() == {"status": "ready"}
    assert httpx.get(base + "/_liveness").json() == {"status": "alive"}
    assert httpx.get(base + "/nope").status_code == 404


async def test_websocket_on_other_path_refused(relay_url):
    try:
        async with websockets.connect(relay_url + "/other"):
            raise AssertionError("upgrade on another path must be refused")
    except websockets.InvalidStatus as error:
        assert error.response.status_code == 404


def test_max_limit_override_is_published_and_clamps(start_relay):
    relay = start_relay(
        env={
            "BUZZ_RELAY_MAX_LIMIT": "3",
            "BUZZ_RELAY_NAME": "Custom",
            "BUZZ_RELAY_MAX_CONNECTIONS_PER_IP": "7",
            "BUZZ_RELAY_AUTH_TIMEOUT_SECS": "2.5",
            "BUZZ_RELAY_MAX_EVENTS_PER_SECOND": "9",
        }
    )
    doc = httpx.get(relay.http_url, headers={"Accept": "application/nostr+json"}).json()
    assert doc["limitation"]["max_limit"] == 3 and doc["limitation"]["default_limit"] == 3
    assert doc["name"] == "Custom"
    assert doc["buzz"]["max_connections_per_ip"] == 7
    assert doc["buzz"]["auth_timeout_seconds"] == 2.5
    assert doc["buzz"]["max_events_per_second"] == 9


async def test_limit_is_clamped_to_max_limit(start_relay, connect):
    relay = start_relay(env={"BUZZ_RELAY_MAX_LIMIT": "3"})
    client = await connect(relay.url)
    for i in range(5):
        await client.ok(1, f"n{i}")
    events, _ = await client.req("s", {"authors": [client.keys.pubkey], "limit": 100})
    assert len(events) == 3
    events, _ = await client.req("d", {"authors": [client.keys.pubkey]})
    assert len(events) == 3


async def test_readiness_503_when_database_stops(start_relay, pg_dir, connect):
    database = EmbeddedPostgres(pg_dir / "own-pg")
    url = database.start_sync()
    try:
        relay = start_relay(database_url=url)
        client = await connect(relay.url)
        database.stop_sync()
        response = await asyncio.to_thread(httpx.get, relay.http_url + "/_readiness", timeout=10)
        assert response.status_code == 503
        assert response.json()["status"] == "unavailable" and response.json()["error"]
        assert (
            await asyncio.to_thread(httpx.get, relay.http_url + "/_liveness")
        ).status_code == 200
        reply = await client.publish(client.sign(1, "while down"))
        assert reply[2:] == [False, "error: internal error; try again"]
        _events, end = await client.req("s", {"limit": 1})
        assert end == ["CLOSED", "s", "error: internal error; try again"]
        database.start_sync()
        # The pool reconnects by itself: the same socket works again.
        reply = await client.publish(client.sign(1, "after restart"))
        assert reply[2] is True, reply
        assert (
            await asyncio.to_thread(httpx.get, relay.http_url + "/_readiness")
        ).status_code == 200
    finally:
        database.stop_sync()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve_embedded(data_dir, port, log_path) -> tuple[subprocess.Popen, float]:
    started = time.monotonic()
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orchestra.relay",
                "serve",
                "--bind",
                f"127.0.0.1:{port}",
                "--embedded-db",
                str(data_dir),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = started + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, log_path.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/_readiness", timeout=0.5).status_code == 200:
                return process, time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    process.kill()
    raise AssertionError(log_path.read_text())


def _stop(process: subprocess.Popen) -> int:
    process.terminate()
    return process.wait(20)


def test_serve_embedded_db_becomes_ready_and_stops_postgres(tmp_path, pg_dir):
    # How fast it gets ready is measured by bench/relay_load.py (docs/performance.md).
    data_dir = pg_dir / "fresh"
    port = free_port()
    process, _ = _serve_embedded(data_dir, port, tmp_path / "first.log")
    assert _stop(process) == 0
    assert not (data_dir / "postmaster.pid").exists(), "embedded PostgreSQL must stop on exit"
    process, _ = _serve_embedded(data_dir, port, tmp_path / "second.log")
    assert _stop(process) == 0
