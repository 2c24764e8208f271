"""Limits against hostile load (protocol.md §13): rates answer
`rate-limited:`, queues stop reading the socket, caps refuse connections, an unauthenticated
connection is closed at its deadline, each limit is logged once per connection per minute, and
a busy connection does not hold up the others."""

import asyncio
import gc
import logging
import math
import time

import orjson
import pytest
import websockets
from websockets.asyncio.client import connect as ws_connect
from websockets.server import ServerProtocol

from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event
from orchestra.relay import stored

UPGRADE = (
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def connection_of(relay, client):
    return next(c for c in relay.connections if c.pubkey == client.keys.pubkey)


def limit_hits(caplog, limit: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "buzz.relay.limits" and r.getMessage().startswith(f"limit {limit} ")
    ]


def watch_limit(connection, limit: str) -> asyncio.Event:
    """An event set when `connection` reaches `limit` (it logs the hit right before waiting)."""
    reached = asyncio.Event()
    log_hit = connection.limit_log.hit

    def hit(name: str, detail: str) -> None:
        if name == limit:
            reached.set()
        log_hit(name, detail)

    connection.limit_log.hit = hit
    return reached


def hold_writer(relay, monkeypatch) -> tuple[asyncio.Event, asyncio.Event]:
    """Make the writer wait before each batch: (entered, release)."""
    entered, release = asyncio.Event(), asyncio.Event()
    process = relay.writer._process

    async def held(batch):
        entered.set()
        await release.wait()
        await process(batch)

    monkeypatch.setattr(relay.writer, "_process", held)
    return entered, release


async def test_event_rate_per_pubkey(relay_with, connect, caplog):
    caplog.set_level(logging.WARNING, "buzz.relay.limits")
    relay = await relay_with(max_events_per_second=1)  # bursts of 5
    keys = Keys.generate()
    first, second = await connect(relay.url, keys=keys), await connect(relay.url, keys=keys)
    started = time.monotonic()
    replies = []
    for n in range(8):  # both connections of the pubkey draw on the same budget
        client = first if n % 2 else second
        replies.append(await client.publish(client.sign(1, f"note {n}")))
    elapsed = time.monotonic() - started
    accepted = [reply for reply in replies if reply[2] is True]
    assert 5 <= len(accepted) <= 5 + math.ceil(elapsed)
    limited = [reply[3] for reply in replies if reply[2] is False]
    assert limited and set(limited) == {
        "rate-limited: more than 1 events per second from this pubkey; retry in 1 s"
    }
    other = await connect(relay.url)
    await other.ok(1, "another pubkey is not limited")
    # Logged once per connection, however many frames hit the limit.
    assert len(limit_hits(caplog, "event rate")) == 2


async def test_event_bytes_rate_per_pubkey(relay_with, connect):
    relay = await relay_with(max_event_bytes_per_second=20_000)  # bursts of 80,000 bytes
    client = await connect(relay.url)
    started = time.monotonic()
    replies = [await client.publish(client.sign(1, f"{n}" + "b" * 15_000)) for n in range(8)]
    elapsed = time.monotonic() - started
    accepted = sum(1 for reply in replies if reply[2] is True)
    assert 5 <= accepted <= 5 + math.ceil(elapsed * 20_000 / 15_000)
    assert replies[-1][3].startswith(
        "rate-limited: more than 20000 bytes of events per second from this pubkey; retry in "
    )


async def test_pending_writes_stop_reading_the_connection(relay_with, connect, monkeypatch):
    relay = await relay_with(max_pending_write_bytes=1)  # one event awaits the writer at most
    client = await connect(relay.url)
    conn = connection_of(relay, client)
    paused = watch_limit(conn, "max_pending_write_bytes")
    entered, release = hold_writer(relay, monkeypatch)
    events = [client.sign(1, f"queued {n}") for n in range(3)]
    for event in events:
        await client.send(["EVENT", event.to_dict()])
    await client.send(["REQ", "after", {"limit": 0}])
    await entered.wait()
    await paused.wait()
    # The connection's reader waits for room: the REQ behind the events is not read yet.
    assert "after" not in conn.subscriptions
    release.set()
    frames = [await client.next(lambda f: f[0] in ("OK", "EOSE")) for _ in range(4)]
    # One event at a time: the REQ is read only once the last event has been handed over.
    oks = [["OK", e.id, True, ""] for e in events]
    assert frames[:2] == oks[:2]
    assert sorted(frames[2:]) == sorted([oks[2], ["EOSE", "after"]])


async def test_a_paused_connection_ends_when_its_client_leaves(
    relay_with, connect, monkeypatch, caplog
):
    relay = await relay_with(max_pending_write_bytes=1)
    client = await connect(relay.url)
    paused = watch_limit(connection_of(relay, client), "max_pending_write_bytes")
    entered, release = hold_writer(relay, monkeypatch)
    for n in range(2):
        await client.send(["EVENT", client.sign(1, f"queued {n}").to_dict()])
    await entered.wait()
    await paused.wait()
    await client.close()
    # Its handler returns although the writer has not moved: the server can close at once.
    relay._server.close(close_connections=True)
    await asyncio.wait_for(relay._server.wait_closed(), 10)
    release.set()
    assert not relay.connections
    assert "unexpected error" not in caplog.text


async def test_full_write_queue_stops_reading_every_writer(relay_with, connect, monkeypatch):
    relay = await relay_with(max_queued_write_bytes=1)
    first, second = await connect(relay.url), await connect(relay.url)
    entered, release = hold_writer(relay, monkeypatch)
    first_event = first.sign(1, "fills the queue")
    await first.send(["EVENT", first_event.to_dict()])
    await entered.wait()
    conn = connection_of(relay, second)
    paused = watch_limit(conn, "max_queued_write_bytes")
    second_event = second.sign(1, "waits for room")
    await second.send(["EVENT", second_event.to_dict()])
    await second.send(["REQ", "after", {"limit": 0}])
    await paused.wait()
    assert "after" not in conn.subscriptions
    release.set()
    assert (await first.next(lambda f: f[0] == "OK"))[1:3] == [first_event.id, True]
    rest = [await second.next(lambda f: f[0] in ("OK", "EOSE")) for _ in range(2)]
    assert sorted(rest) == sorted([["OK", second_event.id, True, ""], ["EOSE", "after"]])


async def test_queued_reqs_stop_reading_the_connection(relay_with, connect, monkeypatch):
    relay = await relay_with(max_pending_reqs=1)
    client = await connect(relay.url)
    conn = connection_of(relay, client)
    paused = watch_limit(conn, "max_pending_reqs")
    entered, release = asyncio.Event(), asyncio.Event()
    query = stored.query_events

    async def held_query(*args, **kwargs):
        entered.set()
        await release.wait()
        return await query(*args, **kwargs)

    monkeypatch.setattr(stored, "query_events", held_query)
    await client.send(["REQ", "a", {"kinds": [1], "limit": 1}])
    await entered.wait()  # a is being answered; b fills the queue; c has to wait
    for subid in ("b", "c"):
        await client.send(["REQ", subid, {"kinds": [1], "limit": 1}])
    note = client.sign(1, "behind the REQs")
    await client.send(["EVENT", note.to_dict()])
    await paused.wait()
    assert list(conn.subscriptions) == ["a", "b", "c"]  # registered; c waits for its turn
    assert relay.writer.budget.used == 0  # the EVENT behind them has not been read
    release.set()
    frames = [await client.next(lambda f: f[0] in ("OK", "EOSE")) for _ in range(4)]
    assert [f for f in frames if f[0] == "EOSE"] == [["EOSE", s] for s in ("a", "b", "c")]
    assert ["OK", note.id, True, ""] in frames


async def test_filter_values_per_connection(relay_with, connect):
    relay = await relay_with(max_filter_values_per_connection=5)
    client = await connect(relay.url)
    authors = [Keys.generate().pubkey for _ in range(3)]
    assert (await client.req("a", {"authors": authors, "limit": 0}))[1] == ["EOSE", "a"]
    _, refused = await client.req("b", {"kinds": [1, 2, 3], "limit": 0})
    assert refused == [
        "CLOSED",
        "b",
        "restricted: too many filter values on this connection (max 5)",
    ]
    # Replacing a subscription frees its values; closing one frees them too.
    assert (await client.req("a", {"kinds": [1, 2, 3, 4, 5], "limit": 0}))[1] == ["EOSE", "a"]
    await client.send(["CLOSE", "a"])
    assert (await client.req("b", {"kinds": [1, 2, 3], "limit": 0}))[1] == ["EOSE", "b"]


async def slow_reader(url: str) -> websockets.ClientConnection:
    """Authenticated, subscribed to ephemeral kind 20001, and never reading again."""
    ws = await ws_connect(url, max_queue=1, max_size=None)
    challenge = orjson.loads(await ws.recv())[1]
    await ws.send(
        orjson.dumps(["AUTH", make_auth_event(Keys.generate(), url, challenge).to_dict()]).decode()
    )
    assert orjson.loads(await ws.recv())[2] is True
    await ws.send('["REQ","flood",{"kinds":[20001],"limit":0}]')
    assert orjson.loads(await ws.recv())[0] == "EOSE"
    return ws


async def test_slow_readers_together_are_bounded(relay_with, connect, caplog):
    caplog.set_level(logging.WARNING, "buzz.relay.limits")
    # Alone, each reader could hold 16 MiB; together they may hold 2 MiB.
    relay = await relay_with(
        max_pending_send_bytes=16 * 2**20, max_pending_send_bytes_total=2 * 2**20
    )
    readers = [await slow_reader(relay.url) for _ in range(2)]
    healthy = await connect(relay.url)
    await healthy.req("live", {"kinds": [20001], "limit": 0})
    publisher = await connect(relay.url)
    big = "x" * 90_000
    for n in range(180):  # within the publisher's byte rate
        await publisher.send(["EVENT", publisher.sign(20001, f"{n}{big}").to_dict()])
        await healthy.next_event("live")
        if all(r.protocol.close_rcvd is not None or r.close_code for r in readers):
            break
    for reader in readers:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            async with asyncio.timeout(20):
                while True:
                    await reader.recv()
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1008, "slow consumer")
    assert len(limit_hits(caplog, "max_pending_send_bytes")) == 2
    assert all(
        "while all connections have" in hit for hit in limit_hits(caplog, "max_pending_send_bytes")
    )
    assert relay.send_total.bytes < 2 * 2**20


async def refused(url: str, **kwargs) -> tuple[int, str]:
    with pytest.raises(websockets.InvalidStatus) as error:
        await ws_connect(url, **kwargs)
    response = error.value.response
    return response.status_code, response.body.decode().strip()


def released(relay) -> asyncio.Event:
    """Set whenever the relay counts a connection as gone."""
    gone = asyncio.Event()
    release = relay.admission.release

    def counted(ip: str) -> None:
        release(ip)
        gone.set()

    relay.admission.release = counted
    return gone


async def test_connections_per_ip(relay_with, connect, caplog):
    caplog.set_level(logging.WARNING, "buzz.relay.limits")
    relay = await relay_with(max_connections_per_ip=2)
    clients = [await connect(relay.url), await connect(relay.url)]
    for _ in range(3):
        assert await refused(relay.url) == (503, "too many connections from 127.0.0.1 (max 2)")
    assert len(limit_hits(caplog, "max_connections_per_ip")) == 1
    # Another address has its own allowance.
    other = await ws_connect(relay.url, local_addr=("127.0.0.2", 0))
    assert orjson.loads(await other.recv())[0] == "AUTH"
    gone = released(relay)
    await other.close()
    await clients[0].close()
    while relay.admission.total > 1:
        gone.clear()
        await gone.wait()
    assert relay.admission.per_ip == {"127.0.0.1": 1}
    await (await connect(relay.url)).ok(1, "room again")


async def test_a_closed_connection_is_freed_without_the_garbage_collector(relay_with):
    relay = await relay_with()
    gone = released(relay)
    gc.collect()
    gc.disable()  # what is freed now is freed by reference counting alone
    try:
        for _ in range(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
            writer.write(UPGRADE)
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
            writer.close()  # no closing handshake: websockets' parser ends on an error
            await writer.wait_closed()
            gone.clear()
            await gone.wait()
        handlers = set(relay._server.handler_tasks)
        if handlers:
            await asyncio.wait(handlers)  # the handlers' own clean-up
        alive = [o for o in gc.get_objects() if isinstance(o, ServerProtocol)]
        assert alive == []
    finally:
        gc.enable()


async def test_connections_in_total(relay_with, connect):
    relay = await relay_with(max_connections=2)
    clients = [await connect(relay.url), await connect(relay.url)]
    assert await refused(relay.url, local_addr=("127.0.0.3", 0)) == (
        503,
        "too many connections (max 2)",
    )
    assert relay.admission.total == 2
    await clients[1].ok(1, "admitted connections are unaffected")


async def test_connections_that_never_authenticate_are_closed(relay_with, connect):
    relay = await relay_with(auth_timeout_seconds=0.3)
    authenticated = await connect(relay.url)
    idle = await ws_connect(relay.url)
    assert orjson.loads(await idle.recv())[0] == "AUTH"
    with pytest.raises(websockets.ConnectionClosed) as closed:
        async with asyncio.timeout(10):
            await idle.recv()
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
        1008,
        "auth-required: no AUTH within 0.3 s",
    )
    await authenticated.ok(1, "authenticated connections have no deadline")


async def test_a_50_mib_result_is_streamed_complete(relay_with, connect):
    relay = await relay_with()  # the default limits, 8 MiB of pending frames among them
    body = "é" * 65_000  # 130,000 bytes of UTF-8 per event, under the 131,072-byte limit
    authors = [await connect(relay.url) for _ in range(4)]  # within each pubkey's byte rate
    published = []
    for author in authors:
        events = [author.sign(1, f"{n}{body}") for n in range(102)]
        for event in events:
            await author.send(["EVENT", event.to_dict()])
        for event in events:
            assert (await author.next(lambda f, e=event: f[:2] == ["OK", e.id]))[2] is True
        published += events
    reader = await connect(relay.url)
    filters = {"authors": [a.keys.pubkey for a in authors], "kinds": [1], "limit": 500}
    received, end = await reader.req("big", filters)
    assert end == ["EOSE", "big"]
    assert sum(len(orjson.dumps(e)) for e in received) > 50 * 2**20
    expected = sorted(published, key=lambda e: (-e.created_at, e.id))
    assert [e["id"] for e in received] == [e.id for e in expected]


async def test_invalid_unicode_in_a_filter_is_invalid_not_an_error(connect, relay_url):
    client = await connect()
    await client.send('["REQ","s",{"#t":["\\ud800"]}]')
    reply = await client.next(lambda f: f[0] == "CLOSED")
    assert reply == ["CLOSED", "s", "invalid: filter contains invalid unicode"]


# A well-behaved client is served while another connection keeps the relay busy: its EVENT is
# acknowledged and its REQ answered while a flood of REQs is in flight (the round robin behind
# it: test_throttle.py).
STORED = 600
FLOOD_REQS = 16  # the default max_pending_reqs: all of them are queued at once
FILTERS = [{"kinds": [1], "limit": 500, "until": 2**40 - i} for i in range(20)]


async def test_a_probe_is_answered_while_a_flood_of_reqs_is_in_flight(relay_with, connect):
    relay = await relay_with()
    author = await connect(relay.url)
    events = [author.sign(1, f"stored {n}") for n in range(STORED)]
    for event in events:
        await author.send(["EVENT", event.to_dict()])
    for event in events:
        assert (await author.next(lambda f, e=event: f[:2] == ["OK", e.id]))[2] is True

    flooder = await connect(relay.url)
    flooding = connection_of(relay, flooder)
    last = f"r{FLOOD_REQS - 1}"
    for n in range(FLOOD_REQS):
        await flooder.send(["REQ", f"r{n}", *FILTERS])
    await flooder.send(["CLOSE"])  # answered in order: once it is, the flood has been read
    assert (await flooder.next(lambda f: f[0] == "NOTICE"))[1].startswith("invalid:")
    assert last in flooding.subscriptions

    probe = await connect(relay.url)
    note = await probe.ok(1, "probe")
    stored, end = await probe.req("mine", {"authors": [probe.keys.pubkey], "limit": 5})
    assert end == ["EOSE", "mine"] and [e["id"] for e in stored] == [note.id]
    # Both answered while the flood's last REQ still waited for its stored results.
    assert flooding.subscriptions[last].pending is not None

    ended = 0
    received = 0
    while ended < FLOOD_REQS:
        frame = await flooder.next(lambda f: f[0] in ("EVENT", "EOSE", "CLOSED"))
        assert frame[0] != "CLOSED", frame
        ended += frame[0] == "EOSE"
        received += frame[0] == "EVENT"
    assert received >= FLOOD_REQS * 500  # each REQ got its 500 newest (the probe's may be live)
