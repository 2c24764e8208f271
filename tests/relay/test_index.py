"""The live-subscription index (relay/index.py): it names every filter that matches an event
(a differential fuzz against testing every filter) and none that cannot, whatever their
number (cost per event independent of non-matching subscriptions)."""

import os
import random
import uuid

from orchestra.nostr.event import sign_event
from orchestra.nostr.filters import parse_filter
from orchestra.nostr.keys import Keys
from orchestra.relay.index import (
    CLOCK_SLACK_SECONDS,
    EXPIRY_SLACK_SECONDS,
    SubscriptionIndex,
    filter_keys,
)

NOW = 1_767_225_600
LOWER_LIMIT = 3600
KEYS = [Keys.generate() for _ in range(3)]
CHANNELS = [str(uuid.UUID(int=n)) for n in range(3)]


def random_filter(rng: random.Random) -> dict:
    f: dict = {}
    if rng.random() < 0.3:
        f["kinds"] = rng.sample([1, 9, 7, 30174], rng.randint(1, 2))
    if rng.random() < 0.3:
        f["authors"] = [k.pubkey for k in rng.sample(KEYS, rng.randint(1, 2))]
    if rng.random() < 0.3:
        f["#h"] = rng.sample(CHANNELS, rng.randint(1, 2))
    if rng.random() < 0.2:
        f["#t"] = rng.sample(["a", "b", "c"], rng.randint(1, 2))
    if rng.random() < 0.2:
        f["since"] = NOW + rng.randint(-4000, 4000)
    if rng.random() < 0.2:
        f["until"] = NOW + rng.randint(-4000, 4000)
    return f


def random_event(rng: random.Random):
    tags = []
    if rng.random() < 0.6:
        tags.append(["h", rng.choice(CHANNELS)])
    for _ in range(rng.randint(0, 3)):
        tags.append(["t", rng.choice("abcd")])
    created_at = NOW + rng.choice([0, 0, 0, -1, 2, -3000, -3599, 800, 899])
    return sign_event(rng.choice(KEYS), rng.choice([1, 9, 7]), "", tags, created_at=created_at)


def test_index_names_exactly_the_filters_that_match():
    rng = random.Random(1717)
    index = SubscriptionIndex(LOWER_LIMIT)
    filters = [parse_filter(random_filter(rng)) for _ in range(400)]
    entries = [index.add(n, f, NOW) for n, f in enumerate(filters)]
    assert all(entry is not None for entry in entries)
    # Some events are judged at a later clock, after filters have changed index.
    for clock in (NOW, NOW + 7, NOW + 1000, NOW + 3700):
        index.advance(clock)
        for _ in range(300):
            event = random_event(rng)
            if event.created_at < clock - LOWER_LIMIT:
                continue  # the relay would not accept it any more
            expected = {n for n, f in enumerate(filters) if f.matches(event)}
            named = [entry.owner for entry in index.candidates(event)]
            assert len(named) == len(set(named)), "a filter was named twice"
            assert expected <= set(named), (event, expected - set(named))


def test_non_matching_filters_are_not_candidates():
    index = SubscriptionIndex(LOWER_LIMIT)
    shapes = [
        lambda: {"kinds": [1], "authors": [os.urandom(32).hex()]},
        lambda: {"#p": [os.urandom(32).hex()]},
        lambda: {"ids": [os.urandom(32).hex()]},
        lambda: {"kinds": [9], "#h": [str(uuid.uuid4())]},
        lambda: {"kinds": [1], "until": NOW - 2 * 86_400},
        lambda: {"kinds": [1], "until": NOW - 60},
        lambda: {"kinds": [1], "since": NOW + 10**7},
        lambda: {"#t": [uuid.uuid4().hex]},
        lambda: {"kinds": [45_000]},
    ]
    for n in range(10_000):
        index.add(n, parse_filter(shapes[n % len(shapes)]()), NOW)
    author = KEYS[0]
    channel = CHANNELS[0]
    for event in (
        sign_event(author, 1, "note", [["t", "x"]], created_at=NOW),
        sign_event(author, 9, "message", [["h", channel]], created_at=NOW),
    ):
        assert list(index.candidates(event)) == []
    wanted = index.add("wanted", parse_filter({"kinds": [9], "#h": [channel]}), NOW)
    message = sign_event(author, 9, "message", [["h", channel]], created_at=NOW)
    assert [entry.owner for entry in index.candidates(message)] == ["wanted"]
    index.remove(wanted)
    assert list(index.candidates(message)) == []


def test_filters_are_filed_under_their_most_selective_field():
    author = KEYS[0].pubkey
    assert filter_keys(parse_filter({"kinds": [9], "#h": [CHANNELS[0]]})) == (
        ("h", CHANNELS[0], 9),
    )
    assert filter_keys(parse_filter({"authors": [author], "#t": ["a", "b"]})) == (
        ("authors", author),
    )
    assert filter_keys(parse_filter({"kinds": [1, 9]})) in (
        (("kinds", 1), ("kinds", 9)),
        (("kinds", 9), ("kinds", 1)),
    )
    assert filter_keys(parse_filter({"since": 5})) is None
    many_kinds = parse_filter({"kinds": list(range(100)), "authors": [author]})
    assert filter_keys(many_kinds) == (("authors", author),)


def test_time_bounds_move_filters_between_indexes():
    index = SubscriptionIndex(LOWER_LIMIT)
    author = KEYS[1]
    later = index.add("later", parse_filter({"since": NOW + 100}), NOW)
    ending = index.add("ending", parse_filter({"until": NOW + 100}), NOW)
    assert later is not None and ending is not None
    now_event = sign_event(author, 1, "", created_at=NOW)
    assert [e.owner for e in index.candidates(now_event)] == ["ending"]
    index.advance(NOW + 100)
    event = sign_event(author, 1, "", created_at=NOW + 100)
    assert sorted(e.owner for e in index.candidates(event)) == ["ending", "later"]
    index.advance(NOW + 100 + CLOCK_SLACK_SECONDS + 1)
    event = sign_event(author, 1, "", created_at=NOW + 106)
    assert [e.owner for e in index.candidates(event)] == ["later"]
    backdated = sign_event(author, 1, "", created_at=NOW + 50)
    assert sorted(e.owner for e in index.candidates(backdated)) == ["ending", "later"]
    # Once nothing the relay accepts can be that old, the filter leaves the index.
    index.advance(NOW + 100 + LOWER_LIMIT + EXPIRY_SLACK_SECONDS)
    oldest = sign_event(author, 1, "", created_at=NOW + 100 + EXPIRY_SLACK_SECONDS)
    assert [e.owner for e in index.candidates(oldest)] == ["later"]
    assert index.add("dead", parse_filter({"until": NOW}), NOW + 2 * 86_400) is None


def test_removed_filters_leave_nothing_behind():
    index = SubscriptionIndex(LOWER_LIMIT)
    entries = []
    for n in range(3000):
        entries.append(index.add(n, parse_filter({"since": NOW + 10**7, "kinds": [n]}), NOW))
        entries.append(index.add(n, parse_filter({"authors": [os.urandom(32).hex()]}), NOW))
    for entry in entries:
        index.remove(entry)
    assert len(index) == 0
    assert index._moves == []  # the schedule of dormant filters is compacted too
