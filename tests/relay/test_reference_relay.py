"""NIP-01 differential test against an independent relay: nostr-sdk's in-memory `LocalRelay`
(protocol.md §16). Same events, same random filters, same answers."""

import random
import time

import pytest

from orchestra.nostr.event import sign_event
from orchestra.nostr.keys import Keys

nostr_sdk = pytest.importorskip("nostr_sdk", reason="nostr-sdk is the reference relay")

SEED = 7
QUERIES = 150


@pytest.fixture
async def reference_url():
    builder = nostr_sdk.LocalRelayBuilder().rate_limit(
        nostr_sdk.RateLimit(max_reqs=1_000_000, notes_per_minute=1_000_000_000)
    )
    relay = builder.build()
    await relay.run()
    yield str(await relay.url())
    relay.shutdown()


def make_events(rng: random.Random, authors: list[Keys]) -> list:
    base = int(time.time()) - 100
    events = []
    for n in range(120):
        kind = rng.choice([1, 1, 1, 7, 0, 10002, 30001])
        tags = [
            [
                rng.choice("tpe"),
                rng.choice(["a", "b"]) if rng.random() < 0.5 else f"{rng.randint(1, 3):064x}",
            ]
            for _ in range(rng.randint(0, 2))
        ]
        tags = [t for t in tags if t[0] == "t" or len(t[1]) == 64]
        if kind == 30001:
            tags.append(["d", rng.choice(["x", "y"])])
        content = f'{{"name":"n{n}"}}' if kind == 0 else f"event {n}"
        events.append(
            sign_event(
                rng.choice(authors), kind, content, tags, created_at=base + rng.randint(0, 20)
            )
        )
    return events


def random_filter(rng: random.Random, authors: list[Keys], events: list) -> dict:
    flt: dict = {"authors": [a.pubkey for a in rng.sample(authors, rng.randint(1, len(authors)))]}
    if rng.random() < 0.5:
        flt["kinds"] = rng.sample([0, 1, 7, 10002, 30001], rng.randint(1, 3))
    if rng.random() < 0.3:
        flt["#t"] = rng.sample(["a", "b"], 1)
    if rng.random() < 0.2:
        flt["ids"] = [e.id for e in rng.sample(events, 5)]
    base = min(e.created_at for e in events)
    if rng.random() < 0.3:
        flt["since"] = base + rng.randint(0, 20)
    if rng.random() < 0.3:
        flt["until"] = base + rng.randint(0, 20)
    if rng.random() < 0.5:
        flt["limit"] = rng.randint(1, 30)
    return flt


async def test_same_answers_as_reference_relay(connect, reference_url):
    rng = random.Random(SEED)
    authors = [Keys.generate() for _ in range(3)]
    events = make_events(rng, authors)
    ours = {author.pubkey: await connect(keys=author) for author in authors}
    reference = await connect(reference_url, auth=False, challenge=False)
    for event in sorted(events, key=lambda e: rng.random()):
        mine = await ours[event.pubkey].publish(event)
        theirs = await reference.publish(event)
        assert mine[2] == theirs[2], (event.kind, mine, theirs)
    reader = ours[authors[0].pubkey]
    for n in range(QUERIES):
        flt = random_filter(rng, authors, events)
        mine, _ = await reader.req(f"q{n}", flt)
        theirs, _ = await reference.req(f"q{n}", flt)
        # Both order newest first; the order within one second is not specified by NIP-01.
        assert sorted(e["id"] for e in mine) == sorted(e["id"] for e in theirs), flt
        assert [e["created_at"] for e in mine] == sorted(
            (e["created_at"] for e in mine), reverse=True
        )
