"""Differential test: SQL translation (storage/queries.py) vs `Filter.matches` + `can_read`."""

import random
import uuid

import asyncpg
import pytest

from orchestra.nostr.event import sign_event
from orchestra.nostr.filters import parse_filter
from orchestra.nostr.keys import Keys
from orchestra.relay.access import can_read, event_channel_id
from orchestra.relay.channels import ChannelCache
from orchestra.relay.storage.migrate import migrate
from orchestra.relay.storage.queries import query_events
from orchestra.relay.storage.rows import insert_events

SEED = 20261129
FILTERS = 600


@pytest.fixture
async def corpus(embedded_pg):
    rng = random.Random(SEED)
    connection = await asyncpg.connect(await embedded_pg.create_database())
    await migrate(connection)
    people = [Keys.from_secret(bytes([i + 1]) * 32) for i in range(4)]
    reader = people[0].pubkey
    channels = {
        str(uuid.UUID(int=rng.getrandbits(128))): vis for vis in ("open", "private", "private")
    }
    for index, (channel_id, visibility) in enumerate(channels.items()):
        await connection.execute(
            "INSERT INTO channels (channel_id, name, visibility, channel_type, creator, created_at,"
            " last_activity_at, create_event_id) VALUES ($1::uuid, 'c', $2, 'stream', $3, 0, 0, 'x')",
            channel_id,
            visibility,
            people[1].pubkey,
        )
        if index < 2:  # the reader belongs to the open and the first private channel
            await connection.execute(
                "INSERT INTO channel_members VALUES ($1::uuid, $2, 'member', $2, 0)",
                channel_id,
                reader,
            )
    hexes = [f"{i:064x}" for i in range(1, 6)]
    words = ["alpha", "beta", "", "γ", "x y"]
    events = []
    for n in range(400):
        tags = []
        for _ in range(rng.randint(0, 4)):
            letter = rng.choice("aetpdPT")
            value = rng.choice(hexes) if letter in "epP" else rng.choice(words)
            tags.append([letter, value, *rng.choice([[], ["extra"], ["", "reply"]])])
        if rng.random() < 0.2:
            tags.append(["t"])  # a one-element tag is not indexed and never matches
        if rng.random() < 0.4:
            tags.append(["h", rng.choice(list(channels))])
        kind = rng.choice([1, 7, 9, 1111, 30174])
        if kind == 30174:
            tags.insert(0, ["d", f"{n:064x}"])
        events.append(
            sign_event(
                rng.choice(people),
                kind,
                f"n{n}",
                tags,
                created_at=1_700_000_000 + rng.randint(0, 30),
            )
        )
    await insert_events(connection, events)
    cache = ChannelCache()
    await cache.load(connection, people[3].pubkey)
    yield connection, events, cache, reader, hexes, words, list(channels), rng
    await connection.close()


def random_filter(rng, events, hexes, words, channels):
    obj = {}
    if rng.random() < 0.2:
        obj["ids"] = [e.id for e in rng.sample(events, rng.randint(0, 5))]
    if rng.random() < 0.3:
        obj["authors"] = rng.sample(sorted({e.pubkey for e in events}), rng.randint(0, 2))
    if rng.random() < 0.4:
        obj["kinds"] = rng.sample([1, 7, 9, 1111, 30174, 3], rng.randint(0, 3))
    for letter in rng.sample("aetpdhP", rng.randint(0, 2)):
        if letter == "h":
            pool = [*channels, "not-a-uuid"]
        elif letter in "epP":
            pool = hexes
        else:
            pool = words
        obj[f"#{letter}"] = rng.sample(pool, rng.randint(0, 2))
    if rng.random() < 0.3:
        obj["since"] = 1_700_000_000 + rng.randint(0, 30)
    if rng.random() < 0.3:
        obj["until"] = 1_700_000_000 + rng.randint(0, 30)
    if rng.random() < 0.7:
        obj["limit"] = rng.randint(0, 40)
    return parse_filter(obj)


async def test_sql_matches_python_matcher(corpus):
    connection, events, cache, reader, hexes, words, channels, rng = corpus
    nonempty = 0
    for _ in range(FILTERS):
        f = random_filter(rng, events, hexes, words, channels)
        expected = sorted(
            (e for e in events if f.matches(e) and can_read(reader, e, event_channel_id(e), cache)),
            key=lambda e: (-e.created_at, e.id),
        )[: f.limit]
        got = [row[1] for row in await query_events(connection, [f], reader)]
        assert got == [e.id for e in expected], f.to_dict()
        nonempty += bool(expected)
    assert nonempty > FILTERS // 4, "the generator must produce filters that match something"


async def test_union_of_filters_is_deduplicated_and_ordered(corpus):
    connection, events, cache, reader, hexes, words, channels, rng = corpus
    for _ in range(100):
        filters = [
            random_filter(rng, events, hexes, words, channels) for _ in range(rng.randint(1, 3))
        ]
        expected_ids: set[str] = set()
        for f in filters:
            matching = sorted(
                (
                    e
                    for e in events
                    if f.matches(e) and can_read(reader, e, event_channel_id(e), cache)
                ),
                key=lambda e: (-e.created_at, e.id),
            )[: f.limit]
            expected_ids.update(e.id for e in matching)
        expected = sorted(
            (e for e in events if e.id in expected_ids), key=lambda e: (-e.created_at, e.id)
        )
        got = [row[1] for row in await query_events(connection, filters, reader)]
        assert got == [e.id for e in expected]
