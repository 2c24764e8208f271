"""Robustness: >= 10,000 random and mutated frames, zero crashes (protocol.md §14)."""

import asyncio
import json
import os
import random
import uuid

import httpx

from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event

SEED = 4242
FRAMES = 10_500
KNOWN_PREFIXES = ("duplicate:", "invalid:", "auth-required:", "restricted:")

JUNK_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    1e308,
    2**53,
    2**64 + 1,
    "",
    "x",
    "\ud800",
    [],
    {},
    [[]],
    [1],
    {"a": 1},
    "a" * 64,
    "A" * 64,
]


def junk(rng: random.Random, depth: int = 0):
    pick = rng.random()
    if depth < 3 and pick < 0.15:
        return [junk(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if depth < 3 and pick < 0.25:
        return {
            rng.choice(["id", "kind", "tags", "#p", "#t", "limit", "x"]): junk(rng, depth + 1)
            for _ in range(rng.randint(0, 3))
        }
    if pick < 0.4:
        return "".join(
            chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0xFFFF), 0x1F600]))
            for _ in range(rng.randint(0, 20))
        )
    return rng.choice(JUNK_VALUES)


def encode(value) -> str:
    # The stdlib encoder escapes lone surrogates (\ud800) and keeps huge integers exact.
    return json.dumps(value, ensure_ascii=True)


def mutate_event(rng: random.Random, event: dict) -> dict:
    mutated = dict(event)
    for _ in range(rng.randint(1, 3)):
        field = rng.choice(
            ["id", "pubkey", "created_at", "kind", "tags", "content", "sig", "extra"]
        )
        action = rng.random()
        if action < 0.3:
            mutated.pop(field, None)
        elif action < 0.6:
            mutated[field] = junk(rng)
        elif field == "tags":
            mutated["tags"] = [
                [rng.choice("hepdt"), str(junk(rng))] for _ in range(rng.randint(0, 5))
            ]
        elif field == "kind":
            mutated["kind"] = rng.choice(
                [0, 9, 9000, 9001, 9002, 9007, 9021, 22242, 30174, 39000, 20000, 65535]
            )
        else:
            mutated[field] = rng.choice(["0" * 64, "f" * 128, 0, "∞"])
    return mutated


def make_frames(rng: random.Random, keys: Keys, channel: str) -> list[str | bytes]:
    from orchestra.nostr.event import sign_event

    valid = [sign_event(keys, 9, f"m{i}", [["h", channel]]).to_dict() for i in range(50)]
    valid += [sign_event(keys, 1, f"n{i}", [["t", "fuzz"]]).to_dict() for i in range(50)]
    frames: list[str | bytes] = []
    while len(frames) < FRAMES:
        choice = rng.random()
        if choice < 0.25:
            frames.append(encode(["EVENT", mutate_event(rng, rng.choice(valid))]))
        elif choice < 0.3:
            frames.append(encode(["EVENT", rng.choice(valid)]))
        elif choice < 0.45:
            filters = [
                junk(rng)
                if rng.random() < 0.5
                else {"kinds": [rng.randint(0, 10)], "limit": rng.randint(0, 3)}
                for _ in range(rng.randint(0, 3))
            ]
            frames.append(
                encode(
                    ["REQ", junk(rng) if rng.random() < 0.3 else f"s{rng.randint(0, 40)}", *filters]
                )
            )
        elif choice < 0.5:
            frames.append(
                encode(["CLOSE", junk(rng) if rng.random() < 0.5 else f"s{rng.randint(0, 40)}"])
            )
        elif choice < 0.55:
            frames.append(
                encode(
                    [
                        "AUTH",
                        mutate_event(
                            rng, make_auth_event(keys, "ws://localhost/", "0" * 64).to_dict()
                        ),
                    ]
                )
            )
        elif choice < 0.65:
            frames.append(
                encode(
                    [
                        rng.choice(["EVENT", "REQ", "COUNT", "", "event"]),
                        *[junk(rng) for _ in range(rng.randint(0, 3))],
                    ]
                )
            )
        elif choice < 0.75:
            whole = encode(["EVENT", rng.choice(valid)])
            frames.append(whole[: rng.randint(0, len(whole) - 1)])
        elif choice < 0.8:
            depth = rng.randint(100, 5000)
            frames.append("[" * depth + "]" * rng.choice([depth, 0]))
        elif choice < 0.85:
            frames.append(
                f'["EVENT",{{"id":"{"a" * 64}","created_at":{rng.randint(10**19, 10**30)}}}]'
            )
        elif choice < 0.9:
            frames.append(os.urandom(rng.randint(1, 200)))
        else:
            frames.append(
                bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 100))).decode("latin-1")
            )
    return frames


async def test_fuzz_frames_never_crash_the_relay(start_relay, connect):
    relay = start_relay()
    rng = random.Random(SEED)
    fuzzers = [await connect(relay.url) for _ in range(3)] + [await connect(relay.url, auth=False)]
    channel = await fuzzers[0].create_channel()
    await fuzzers[1].ok(9021, "", [["h", channel]])
    bystander = await connect(relay.url)
    await bystander.req("watch", {"kinds": [1], "authors": [fuzzers[0].keys.pubkey]})

    async def blast(client, frames):
        for frame in frames:
            await client.ws.send(frame)
        # A sentinel REQ: its EOSE (CLOSED when unauthenticated) proves every earlier frame
        # was processed.
        await client.send(["REQ", "sentinel", {"limit": 0}])
        replies = []
        async with asyncio.timeout(120):
            while True:
                message = json.loads(await client.ws.recv())
                if message[:2] in (["EOSE", "sentinel"], ["CLOSED", "sentinel"]):
                    return replies
                replies.append(message)

    frames = make_frames(rng, fuzzers[0].keys, channel)
    shares = [frames[i :: len(fuzzers)] for i in range(len(fuzzers))]
    results = await asyncio.gather(*(blast(c, s) for c, s in zip(fuzzers, shares, strict=True)))
    assert sum(len(s) for s in shares) >= 10_000
    messages = [m for replies in results for m in replies if m[0] in ("OK", "CLOSED", "NOTICE")]
    assert len(messages) > 5_000
    for message in messages:
        text = message[-1]
        if message[0] == "OK" and message[2] is True:
            assert text in ("", "duplicate: already have this event"), message
        else:
            assert text.startswith(KNOWN_PREFIXES), message
    assert "Traceback" not in relay.log_path.read_text(errors="replace")

    # The relay still serves a well-behaved client, and nobody received foreign data.
    readiness = await asyncio.to_thread(httpx.get, relay.http_url + "/_readiness")
    assert readiness.status_code == 200
    fresh = await connect(relay.url)
    note = await fresh.ok(1, "after the storm")
    events, _ = await fresh.req("check", {"ids": [note.id]})
    assert [e["id"] for e in events] == [note.id]
    other_channel = await fresh.create_channel("private")
    await fresh.ok(9, "private", [["h", other_channel]])
    leaked = [
        m for replies in results for m in replies if m[0] == "EVENT" and other_channel in str(m)
    ]
    assert leaked == []
    unique = str(uuid.uuid4())
    assert unique not in str(results)
