import random

import pytest

from orchestra.nostr.event import sign_event
from orchestra.nostr.filters import FilterError, matches_any, parse_filter
from orchestra.nostr.keys import Keys

ALICE, BOB = Keys.generate(), Keys.generate()
CHANNEL = "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"
MESSAGE = sign_event(
    ALICE, 9, "hi", [["h", CHANNEL], ["p", BOB.pubkey], ["p", ALICE.pubkey]], created_at=100
)


@pytest.mark.parametrize(
    ("raw", "matches"),
    [
        ({}, True),
        ({"kinds": [9]}, True),
        ({"kinds": [1]}, False),
        ({"kinds": []}, False),
        ({"authors": [ALICE.pubkey]}, True),
        ({"authors": [BOB.pubkey]}, False),
        ({"ids": [MESSAGE.id]}, True),
        ({"#h": [CHANNEL]}, True),
        ({"#p": [BOB.pubkey]}, True),
        ({"#p": [ALICE.pubkey]}, True),
        ({"#p": []}, False),
        ({"since": 100, "until": 100}, True),
        ({"since": 101}, False),
        ({"until": 99}, False),
        ({"since": 101, "until": 100}, False),
        ({"kinds": [9], "authors": [BOB.pubkey]}, False),
        ({"search": "ignored", "kinds": [9]}, True),
    ],
)
def test_matching(raw, matches):
    assert parse_filter(raw).matches(MESSAGE) is matches


def test_tag_filter_matches_first_value_only():
    event = sign_event(ALICE, 1, "", [["t", "first", "second"]])
    assert parse_filter({"#t": ["first"]}).matches(event)
    assert not parse_filter({"#t": ["second"]}).matches(event)


def test_or_across_filters():
    filters = [parse_filter({"kinds": [1]}), parse_filter({"authors": [ALICE.pubkey]})]
    assert matches_any(filters, MESSAGE)
    assert not matches_any([parse_filter({"kinds": [1]})], MESSAGE)


def test_limit_is_clamped_and_defaults_to_max():
    assert parse_filter({}).limit == 500
    assert parse_filter({"limit": 10_000}).limit == 500
    assert parse_filter({"limit": 10_000}, max_limit=50).limit == 50
    assert parse_filter({"limit": 0}).limit == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "invalid: filter must be an object"),
        ({"ids": ["abc"]}, "invalid: ids must be an array of 64 lowercase hex strings"),
        ({"authors": ["A" * 64]}, "invalid: authors must be an array of 64 lowercase hex strings"),
        ({"authors": "x"}, "invalid: authors must be an array"),
        ({"kinds": [1.5]}, "invalid: kinds must be an array of integers between 0 and 65535"),
        ({"kinds": [True]}, "invalid: kinds must be an array of integers between 0 and 65535"),
        ({"#p": ["npub1xyz"]}, "invalid: #p must be an array of 64 lowercase hex strings"),
        ({"#h": [1]}, "invalid: #h must be an array of strings"),
        ({"#hh": ["x"]}, "invalid: tag filter keys must be # plus one letter"),
        ({"#1": ["x"]}, "invalid: tag filter keys must be # plus one letter"),
        ({"since": -1}, "invalid: since must be a non-negative integer"),
        ({"until": "5"}, "invalid: until must be a non-negative integer"),
        ({"limit": 1.0}, "invalid: limit must be a non-negative integer"),
        ({"kinds": list(range(1001))}, "invalid: too many values in kinds (max 1000)"),
    ],
)
def test_errors(raw, message):
    with pytest.raises(FilterError) as caught:
        parse_filter(raw)
    assert str(caught.value) == message


def test_matches_nothing():
    assert parse_filter({"kinds": []}).matches_nothing()
    assert parse_filter({"#h": []}).matches_nothing()
    assert parse_filter({"since": 5, "until": 4}).matches_nothing()
    assert not parse_filter({"since": 5, "until": 5}).matches_nothing()


def test_to_dict_round_trips():
    rng = random.Random(3)
    for _ in range(200):
        raw = {}
        if rng.random() < 0.5:
            raw["kinds"] = rng.sample(range(20), rng.randint(0, 3))
        if rng.random() < 0.5:
            raw["#p"] = [rng.choice([ALICE.pubkey, BOB.pubkey])]
        if rng.random() < 0.5:
            raw["since"] = rng.randint(0, 200)
        parsed = parse_filter(raw)
        assert parse_filter(parsed.to_dict()) == parsed
