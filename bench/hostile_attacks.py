"""Attacker processes for bench/relay_hostile.py (issue 17): each replays one attack against a
relay on the loopback interface, bounded in count and time.

    python bench/hostile_attacks.py ROLE URL [--scale S]

The process prepares (signs its events, opens and authenticates its connections), prints
`ready`, waits for a line on stdin, runs the attack and prints its outcome as one JSON line.
Roles that hold a state (`nonmatching_subs`) keep it until a second line arrives.
"""

import argparse
import asyncio
import os
import resource
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

sys.path.insert(0, str(Path(__file__).resolve().parent))

from orchestra.nostr.event import Event, sign_event
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event

ATTACK_SECONDS = 90.0  # every attack ends by then, finished or not
# The idle-socket attacker connects from this loopback address, so the relay's per-IP cap
# tells it apart from the well-behaved probe on 127.0.0.1.
ATTACKER_ADDRESS = "127.0.0.2"


async def open_client(
    url: str, keys: Keys | None = None, source: str | None = None
) -> ClientConnection:
    """A WebSocket to the relay, authenticated as `keys` (a fresh identity by default)."""
    ws = await connect(
        url,
        max_size=None,
        compression=None,
        open_timeout=30,
        local_addr=(source, 0) if source else None,
    )
    challenge = orjson.loads(await ws.recv())[1]
    auth = make_auth_event(keys or Keys.generate(), url, challenge)
    await ws.send(orjson.dumps(["AUTH", auth.to_dict()]).decode())
    reply = orjson.loads(await ws.recv())
    assert reply[:3] == ["OK", auth.id, True], reply
    return ws


async def close_all(sockets: list[ClientConnection]) -> None:
    """Close together: a socket whose reader stopped waits for the relay's close timeout."""
    await asyncio.gather(*(ws.close() for ws in sockets))


def outcome_of(message: str) -> str:
    return "accepted" if message == "" else message.split(":", 1)[0]


def close_of(ws: ClientConnection) -> str | None:
    if ws.close_code is None:
        return None
    return f"{ws.close_code} {ws.close_reason or ''}".strip()


async def pipeline(ws: ClientConnection, events: list[Event]) -> dict:
    """Send every event without waiting, read every answer: counts by outcome."""
    outcomes: Counter[str] = Counter()
    waiting = {event.id for event in events}

    async def read() -> None:
        while waiting:
            frame = orjson.loads(await ws.recv())
            if frame[0] == "OK" and frame[1] in waiting:
                waiting.discard(frame[1])
                outcomes[outcome_of(frame[3])] += 1

    reader = asyncio.create_task(read())
    try:
        for event in events:
            await ws.send('["EVENT",' + event.raw + "]")
        await reader
    except ConnectionClosed:
        reader.cancel()
    outcomes["unanswered"] += len(waiting)
    return {"sent": len(events), **outcomes, "closed": close_of(ws)}


def signed(keys: Keys, count: int, content: Callable[[int], str], tags=()) -> list[Event]:
    return [sign_event(keys, 1, content(n), tags) for n in range(count)]


async def flood_role(url: str, publishers: list[list[Event]]) -> Callable[[], Awaitable[dict]]:
    """Pipeline each list of events on its own connection (authenticated as its author)."""
    sockets = []
    for events in publishers:
        keys = KEYS[events[0].pubkey]
        sockets.append(await open_client(url, keys))

    async def attack() -> dict:
        started = time.perf_counter()
        results = await asyncio.gather(
            *(pipeline(ws, events) for ws, events in zip(sockets, publishers, strict=True))
        )
        seconds = time.perf_counter() - started
        total: Counter[str] = Counter()
        for result in results:
            total.update({k: v for k, v in result.items() if isinstance(v, int)})
        closes = sorted({r["closed"] for r in results if r["closed"]})
        for ws in sockets:
            await ws.close()
        return {
            **total,
            "connections": len(sockets),
            "seconds": round(seconds, 2),
            "closes": closes,
        }

    return attack


KEYS: dict[str, Keys] = {}


def new_keys() -> Keys:
    keys = Keys.generate()
    KEYS[keys.pubkey] = keys
    return keys


async def small_flood(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """10 connections x 1,000 small events, pipelined."""
    per = int(1000 * scale)
    return await flood_role(
        url, [signed(new_keys(), per, lambda n: f"flood {n}") for _ in range(10)]
    )


async def tags2000(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """400 legal events with 2,000 tags each, pipelined on one connection."""
    tags = [["t", f"t{i}"] for i in range(2000)]
    keys = new_keys()
    return await flood_role(url, [signed(keys, int(400 * scale), lambda n: f"tags {n}", tags)])


async def big_events(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """99 MB of pipelined 99 KB events on one connection."""
    keys = new_keys()
    filler = "x" * 99_000
    return await flood_role(url, [signed(keys, int(1000 * scale), lambda n: f"{n} {filler}")])


async def ingest(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """The throughput yardstick: 4 connections x 5,000 small events, pipelined."""
    per = int(5000 * scale)
    attack = await flood_role(
        url, [signed(new_keys(), per, lambda n: f"ingest {n}") for _ in range(4)]
    )

    async def measured() -> dict:
        result = await attack()
        result["events_per_second"] = round(result.get("accepted", 0) / result["seconds"], 1)
        return result

    return measured


def nonmatching_filters(sub: int) -> list[dict]:
    """20 filters, all within limits, none matching anything the bench publishes."""
    now = int(time.time())
    shapes = [
        lambda: {"kinds": [1], "authors": [os.urandom(32).hex()]},
        lambda: {"#p": [os.urandom(32).hex()]},
        lambda: {"ids": [os.urandom(32).hex()]},
        lambda: {"kinds": [9], "#h": [str(uuid.uuid4())]},
        lambda: {"kinds": [1], "until": 1_000_000},
        lambda: {"kinds": [1], "since": now + 10**7},
        lambda: {"#t": [f"nothing-{sub}"]},
        lambda: {"kinds": [40_000 + sub % 9_000]},
    ]
    return [{**shapes[i % len(shapes)](), "limit": 0} for i in range(20)]


async def nonmatching_subs(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """10 connections x 1,024 subscriptions x 20 non-matching filters, held until told."""
    connections, per = 10, int(1024 * scale)
    sockets = [await open_client(url) for _ in range(connections)]

    async def subscribe(ws: ClientConnection) -> int:
        for n in range(per):
            await ws.send(orjson.dumps(["REQ", f"s{n}", *nonmatching_filters(n)]).decode())
        answered = 0
        while answered < per:
            frame = orjson.loads(await ws.recv())
            answered += frame[0] in ("EOSE", "CLOSED")
        return answered

    await asyncio.gather(*(subscribe(ws) for ws in sockets))

    async def hold() -> dict:
        await asyncio.to_thread(sys.stdin.readline)
        closes = [close_of(ws) for ws in sockets]
        await close_all(sockets)
        return {
            "subscriptions": connections * per,
            "filters": connections * per * 20,
            "closed_by_relay": sum(1 for c in closes if c),
        }

    return hold


async def req_flood(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """20 connections x 20 REQs x 20 filters of limit 500, every result read."""
    connections, reqs = 20, max(1, int(20 * scale))
    sockets = [await open_client(url) for _ in range(connections)]

    async def flood(ws: ClientConnection) -> Counter[str]:
        counts: Counter[str] = Counter()
        for n in range(reqs):
            filters = [{"kinds": [1], "limit": 500, "until": 2**40 - i} for i in range(20)]
            await ws.send(orjson.dumps(["REQ", f"r{n}", *filters]).decode())
        done = 0
        try:
            while done < reqs:
                frame = orjson.loads(await ws.recv())
                counts[frame[0]] += 1
                done += frame[0] in ("EOSE", "CLOSED")
        except ConnectionClosed:
            counts["connection closed"] += 1
        return counts

    async def attack() -> dict:
        started = time.perf_counter()
        total: Counter[str] = Counter()
        for counts in await asyncio.gather(*(flood(ws) for ws in sockets)):
            total.update(counts)
        seconds = time.perf_counter() - started
        await close_all(sockets)
        return {
            "reqs": connections * reqs,
            "events_received": total["EVENT"],
            "eose": total["EOSE"],
            "closed": total["CLOSED"],
            "connections_closed": total["connection closed"],
            "seconds": round(seconds, 2),
        }

    return attack


async def large_result(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """Store ~50 MiB in events of ~130 KB (four authors, within their byte rates), then read
    them all back with one REQ."""
    authors = [new_keys() for _ in range(4)]
    per = max(1, int(102 * scale))
    body = "é" * 65_000  # 130,000 UTF-8 bytes, under the 131,072-byte event limit
    for keys in authors:
        ws = await open_client(url, keys)
        result = await pipeline(ws, signed(keys, per, lambda n: f"{n}{body}"))
        assert result.get("accepted") == per, result
        await ws.close()
    reader = await open_client(url)

    async def attack() -> dict:
        started = time.perf_counter()
        request = {"authors": [k.pubkey for k in authors], "kinds": [1], "limit": 500}
        await reader.send(orjson.dumps(["REQ", "big", request]).decode())
        events = size = 0
        end = None
        try:
            while True:
                message = await reader.recv()
                if message.startswith('["EVENT"'):
                    events += 1
                    size += len(message.encode())
                    continue
                end = orjson.loads(message)
                break
        except ConnectionClosed:
            end = ["connection closed", close_of(reader)]
        seconds = time.perf_counter() - started
        await reader.close()
        return {
            "events_expected": len(authors) * per,
            "events_received": events,
            "mib_received": round(size / 2**20, 1),
            "ended_with": end[0] if end else None,
            "seconds": round(seconds, 2),
        }

    return attack


REQUEST = (
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


async def idle_sockets(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """~20,000 idle unauthenticated WebSockets from one address, held for 5 s."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    count = min(int(20_000 * scale), hard - 200)
    host, port = url.removeprefix("ws://").rsplit(":", 1)

    async def attack() -> dict:
        statuses: Counter[str] = Counter()
        writers = []

        async def one() -> None:
            try:
                reader, writer = await asyncio.open_connection(
                    host, int(port), local_addr=(ATTACKER_ADDRESS, 0)
                )
                writer.write(REQUEST)
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                statuses[head.split(b" ", 2)[1].decode()] += 1
                writers.append(writer)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as error:
                statuses[type(error).__name__] += 1

        started = time.perf_counter()
        for start in range(0, count, 500):
            await asyncio.gather(*(one() for _ in range(min(500, count - start))))
        opened = time.perf_counter() - started
        await asyncio.sleep(5)  # hold them: the attack is their presence
        for writer in writers:
            writer.close()
        return {
            "attempted": count,
            "upgraded (101)": statuses.pop("101", 0),
            "refused (503)": statuses.pop("503", 0),
            **statuses,
            "open_seconds": round(opened, 2),
        }

    return attack


async def bad_unicode(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """20,000 34-byte frames `["REQ","s",{"#t":["\\ud800"]}]`, pipelined."""
    ws = await open_client(url)
    count = int(20_000 * scale)
    frame = '["REQ","s",{"#t":["\\ud800"]}]'

    async def attack() -> dict:
        replies: Counter[str] = Counter()

        async def read() -> None:
            for _ in range(count):
                message = orjson.loads(await ws.recv())
                replies[" ".join(str(part) for part in (message[0], message[-1]))] += 1

        reader = asyncio.create_task(read())
        started = time.perf_counter()
        for _ in range(count):
            await ws.send(frame)
        await reader
        seconds = time.perf_counter() - started
        await ws.close()
        return {"frames": count, "replies": dict(replies), "seconds": round(seconds, 2)}

    return attack


async def slow_readers(url: str, scale: float) -> Callable[[], Awaitable[dict]]:
    """10 subscribers to every kind-1 event that never read, while 3 publishers pipeline
    3,000 events of 10 KB."""
    readers = []
    for _ in range(10):
        ws = await connect(url, max_size=None, max_queue=1, compression=None)
        challenge = orjson.loads(await ws.recv())[1]
        await ws.send(
            orjson.dumps(
                ["AUTH", make_auth_event(Keys.generate(), url, challenge).to_dict()]
            ).decode()
        )
        await ws.recv()
        await ws.send('["REQ","all",{"kinds":[1],"limit":0}]')
        await ws.recv()
        readers.append(ws)
    filler = "y" * 10_000
    publish = await flood_role(
        url,
        [signed(new_keys(), int(1000 * scale), lambda n: f"{n}{filler}") for _ in range(3)],
    )

    async def attack() -> dict:
        published = await publish()
        closes: Counter[str] = Counter()
        for ws in readers:
            try:
                async with asyncio.timeout(30):
                    while True:
                        await ws.recv()
            except ConnectionClosed:
                closes[close_of(ws) or "closed"] += 1
            except TimeoutError:
                closes["still open"] += 1
        return {"publishers": published, "slow_readers": dict(closes)}

    return attack


ROLES = {
    fn.__name__: fn
    for fn in (
        small_flood,
        tags2000,
        big_events,
        ingest,
        nonmatching_subs,
        req_flood,
        large_result,
        idle_sockets,
        bad_unicode,
        slow_readers,
    )
}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=sorted(ROLES))
    parser.add_argument("url")
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    attack = await ROLES[args.role](args.url, args.scale)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    try:
        async with asyncio.timeout(ATTACK_SECONDS):
            outcome = await attack()
    except TimeoutError:
        outcome = {"error": f"did not finish within {ATTACK_SECONDS:g} s"}
    print(orjson.dumps(outcome).decode(), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
