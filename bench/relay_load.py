"""Relay load benchmark: persisted ingest, fan-out latency, `#h` query latency, and the same
ingest against nostr-sdk's in-memory `LocalRelay` as a reference.

Run (from the repository root, after `just setup`):

    .venv/bin/python bench/relay_load.py                 # full run, about 2 minutes
    .venv/bin/python bench/relay_load.py --quick         # smaller numbers, a smoke run
    .venv/bin/python bench/relay_load.py --json out.json # also write the raw results

It starts `buzz-relay serve --embedded-db` on a fresh temporary directory (PostgreSQL from
pgserver), so the numbers include real, durable commits, and reports how long that start took to
a 200 from /_readiness, and again on the directory once it holds the database (issue 2 targets:
10 s and 5 s). Results go to docs/performance.md.
"""

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relay_process import running_relay

from orchestra.nostr.event import Event, sign_event
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event


@dataclass
class Publisher:
    keys: Keys
    channel: str
    events: list[Event] = field(default_factory=list)


async def authenticate(ws: websockets.ClientConnection, keys: Keys, url: str) -> None:
    """Answer the relay's NIP-42 challenge and wait for `OK true`."""
    message = json.loads(await ws.recv())
    assert message[0] == "AUTH", message
    auth = make_auth_event(keys, url, message[1])
    await ws.send(json.dumps(["AUTH", auth.to_dict()]))
    reply = json.loads(await ws.recv())
    assert reply[:3] == ["OK", auth.id, True], reply


async def publish_one(ws: websockets.ClientConnection, event: Event) -> None:
    await ws.send('["EVENT",' + event.raw + "]")
    reply = json.loads(await ws.recv())
    assert reply[0] == "OK" and reply[2] is True, reply


def channel_create(keys: Keys, channel: str, name: str) -> Event:
    return sign_event(keys, 9007, "", [["h", channel], ["name", name], ["visibility", "private"]])


async def connect(url: str, keys: Keys | None) -> websockets.ClientConnection:
    ws = await websockets.connect(url, max_size=2**24, compression=None)
    if keys is not None:
        await authenticate(ws, keys, url)
    return ws


async def pipeline(ws: websockets.ClientConnection, events: Sequence[Event], window: int) -> int:
    """Send events keeping at most `window` unacknowledged; return how many were accepted."""
    frames = ['["EVENT",' + e.raw + "]" for e in events]
    in_flight = asyncio.Semaphore(window)
    accepted = 0

    async def reader() -> None:
        nonlocal accepted
        for _ in frames:
            reply = json.loads(await ws.recv())
            if reply[0] == "OK" and reply[2] is True:
                accepted += 1
            in_flight.release()

    read_task = asyncio.create_task(reader())
    for frame in frames:
        await in_flight.acquire()
        await ws.send(frame)
    await read_task
    return accepted


def prepare_publishers(count: int, per_publisher: int, kind: int = 9) -> list[Publisher]:
    publishers = []
    for index in range(count):
        keys = Keys.generate()
        channel = str(uuid.uuid4())
        publisher = Publisher(keys, channel)
        base = int(time.time())
        publisher.events = [
            sign_event(keys, kind, f"load message {index}/{n}", [["h", channel]], created_at=base)
            for n in range(per_publisher)
        ]
        publishers.append(publisher)
    return publishers


async def ingest(url: str, publishers: list[Publisher], *, auth: bool, window: int) -> dict:
    sockets = [await connect(url, p.keys if auth else None) for p in publishers]
    if auth:
        for ws, p in zip(sockets, publishers, strict=True):
            await publish_one(ws, channel_create(p.keys, p.channel, f"load {p.channel[:8]}"))
    total = sum(len(p.events) for p in publishers)
    started = time.perf_counter()
    accepted = await asyncio.gather(
        *(pipeline(ws, p.events, window) for ws, p in zip(sockets, publishers, strict=True))
    )
    elapsed = time.perf_counter() - started
    for ws in sockets:
        await ws.close()
    return {
        "events": total,
        "accepted": sum(accepted),
        "publishers": len(publishers),
        "seconds": round(elapsed, 3),
        "events_per_second": round(sum(accepted) / elapsed, 1),
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def latency_summary(samples_ms: list[float]) -> dict:
    return {
        "samples": len(samples_ms),
        "p50_ms": round(percentile(samples_ms, 50), 3),
        "p99_ms": round(percentile(samples_ms, 99), 3),
        "mean_ms": round(statistics.fmean(samples_ms), 3),
    }


async def fanout(url: str, subscribers: int, messages: int) -> dict:
    """Publish `messages` events one at a time to a channel with `subscribers` live readers.

    Reports the publish-to-delivery latency of every delivery (send of the EVENT frame to its
    arrival at each subscriber: includes validation and the durable commit) and, per message,
    the spread between the first and the last subscriber's arrival (what fanning out to all
    subscribers adds once the event is committed).
    """
    owner = Keys.generate()
    channel = str(uuid.uuid4())
    owner_ws = await connect(url, owner)
    await publish_one(owner_ws, channel_create(owner, channel, "fanout"))
    readers = [Keys.generate() for _ in range(subscribers)]
    for reader in readers:
        await publish_one(
            owner_ws, sign_event(owner, 9000, "", [["h", channel], ["p", reader.pubkey, "member"]])
        )
    reader_sockets = [await connect(url, reader) for reader in readers]
    for ws in reader_sockets:
        await ws.send(json.dumps(["REQ", "live", {"kinds": [9], "#h": [channel], "limit": 0}]))
        assert json.loads(await ws.recv())[0] == "EOSE"

    end_to_end: list[float] = []
    spread: list[float] = []
    for n in range(messages):
        event = sign_event(owner, 9, f"fanout {n}", [["h", channel]])
        received: list[float] = []

        async def receive(
            ws: websockets.ClientConnection,
            target: str = event.id,
            arrivals: list[float] = received,
        ) -> None:
            while True:
                message = json.loads(await ws.recv())
                if message[0] == "EVENT" and message[2]["id"] == target:
                    arrivals.append(time.perf_counter())
                    return

        waiters = [asyncio.create_task(receive(ws)) for ws in reader_sockets]
        sent = time.perf_counter()
        await owner_ws.send('["EVENT",' + event.raw + "]")
        reply = json.loads(await owner_ws.recv())
        assert reply[2] is True, reply
        await asyncio.gather(*waiters)
        end_to_end.extend((t - sent) * 1000 for t in received)
        spread.append((max(received) - min(received)) * 1000)
    for ws in [owner_ws, *reader_sockets]:
        await ws.close()
    return {
        "subscribers": subscribers,
        "messages": messages,
        "publish_to_delivery": latency_summary(end_to_end),
        "delivery_spread": latency_summary(spread),
    }


async def query_latency(url: str, publishers: list[Publisher], queries: int) -> dict:
    reader = publishers[0].keys
    ws = await connect(url, reader)
    samples = []
    for n in range(queries):
        subid = f"q{n}"
        started = time.perf_counter()
        await ws.send(
            json.dumps(["REQ", subid, {"kinds": [9], "#h": [publishers[0].channel], "limit": 50}])
        )
        count = 0
        while True:
            message = json.loads(await ws.recv())
            if message[0] == "EOSE":
                break
            count += 1
        samples.append((time.perf_counter() - started) * 1000)
        await ws.send(json.dumps(["CLOSE", subid]))
        assert count == 50, count
    await ws.close()
    return latency_summary(samples)


async def reference_ingest(publishers_count: int, per_publisher: int, window: int) -> dict:
    import nostr_sdk

    builder = nostr_sdk.LocalRelayBuilder().rate_limit(
        nostr_sdk.RateLimit(max_reqs=1_000_000, notes_per_minute=1_000_000_000)
    )
    relay = builder.build()
    await relay.run()
    url = str(await relay.url())
    try:
        return await ingest(
            url, prepare_publishers(publishers_count, per_publisher), auth=False, window=window
        )
    finally:
        relay.shutdown()


async def run(args: argparse.Namespace) -> dict:
    results: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
    }
    per_publisher = args.events // args.publishers
    with tempfile.TemporaryDirectory(prefix="relay-load-") as tmp:
        fresh: dict[str, float] = {}
        async with running_relay(Path(tmp), fresh) as url:
            publishers = prepare_publishers(args.publishers, per_publisher)
            results["ingest"] = await ingest(url, publishers, auth=True, window=args.window)
            if args.stored > args.events:
                extra = prepare_publishers(
                    args.publishers, (args.stored - args.events) // args.publishers
                )
                await ingest(url, extra, auth=True, window=args.window)
            results["stored_events"] = max(args.stored, args.events)
            results["h_query"] = await query_latency(url, publishers, args.queries)
            results["fanout"] = await fanout(url, args.subscribers, args.fanout_messages)
        existing: dict[str, float] = {}
        async with running_relay(Path(tmp), existing):
            pass
        results["embedded_db_ready_seconds"] = {
            "fresh_directory": round(fresh["ready_seconds"], 2),
            "existing_database": round(existing["ready_seconds"], 2),
        }
    reference = await reference_ingest(args.publishers, per_publisher, args.window)
    results["reference_ingest"] = reference
    results["ingest_ratio_vs_reference"] = round(
        results["ingest"]["events_per_second"] / reference["events_per_second"], 3
    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=40_000, help="events in the timed ingest")
    parser.add_argument(
        "--stored", type=int, default=100_000, help="events stored before the query test"
    )
    parser.add_argument("--publishers", type=int, default=8)
    parser.add_argument(
        "--window", type=int, default=200, help="unacknowledged events per publisher"
    )
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--fanout-messages", type=int, default=200)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    if args.quick:
        args.events, args.stored, args.subscribers = 4000, 4000, 20
        args.fanout_messages, args.queries = 30, 50
    results = asyncio.run(run(args))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
