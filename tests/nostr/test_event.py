import json
import random

import nostr_sdk
import pytest

from orchestra.nostr.event import (
    Event,
    EventError,
    compute_id,
    d_tag,
    kind_class,
    parse_event,
    serialize_for_id,
    sign_event,
)
from orchestra.nostr.keys import Keys

SECRET_3 = "0000000000000000000000000000000000000000000000000000000000000003"
WORKED_TAGS = [
    ["h", "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"],
    ["e", "a" * 64, "", "reply"],
    ["p", "b" * 64],
]
WORKED_CONTENT = 'Line one\nLine "two" — ok'


def worked_example() -> Event:
    return sign_event(
        Keys.parse(SECRET_3), 9, WORKED_CONTENT, WORKED_TAGS, created_at=1767225600, aux=bytes(32)
    )


def test_worked_example_of_the_spec():
    event = worked_example()
    assert serialize_for_id(event.pubkey, 1767225600, 9, WORKED_TAGS, WORKED_CONTENT).decode() == (
        '[0,"f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9",1767225600,9,'
        '[["h","0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"],["e","' + "a" * 64 + '","","reply"],'
        '["p","' + "b" * 64 + '"]],"Line one\\nLine \\"two\\" — ok"]'
    )
    assert event.id == "a2d62db7d5a8b06ac9f9f13a60162d02eefd8637767887c5fdfab17cf86b80ae"
    assert event.sig == (
        "cc6a9b60b259e949422b4d7e44dcfe8c3f77db3621d4c3c6f460bb83b27468e5"
        "c02aa9d1b432a638cb4981c14695d0b568e34c013c7647c520779ef05d86dc13"
    )


def test_raw_is_canonical_key_order_and_round_trips():
    event = worked_example()
    assert list(json.loads(event.raw)) == [
        "id",
        "pubkey",
        "created_at",
        "kind",
        "tags",
        "content",
        "sig",
    ]
    assert parse_event(json.loads(event.raw)) == event
    assert " " not in event.raw.split('"content"')[0]


ESCAPE_SAMPLES = [
    'quote " backslash \\ slash /',
    "\n\r\t\b\f",
    "".join(chr(c) for c in range(0x20)),
    "DEL \x7f line sep \u2028 para sep \u2029",
    "emoji 🐝 and ümlaut and 漢字",
]


@pytest.mark.parametrize("content", ESCAPE_SAMPLES)
def test_ids_agree_with_stdlib_json_and_nostr_sdk(content):
    keys = Keys.generate()
    tags = [["t", content], ["p", keys.pubkey]]
    expected = json.dumps(
        [0, keys.pubkey, 1700000000, 1, tags, content], separators=(",", ":"), ensure_ascii=False
    ).encode()
    assert serialize_for_id(keys.pubkey, 1700000000, 1, tags, content) == expected
    event = sign_event(keys, 1, content, tags, created_at=1700000000)
    sdk_event = nostr_sdk.Event.from_json(event.raw)
    assert sdk_event.id().to_hex() == event.id
    assert sdk_event.verify()


def test_random_strings_agree_with_stdlib_json():
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(0x80)] + ["\u2028", "é", "🐝", "\ufeff"]
    for _ in range(2000):
        content = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        expected = json.dumps(
            [0, "a" * 64, 1, 1, [], content], separators=(",", ":"), ensure_ascii=False
        )
        assert serialize_for_id("a" * 64, 1, 1, [], content) == expected.encode()


def test_lone_surrogate_is_rejected_not_a_crash():
    with pytest.raises(EventError, match="^invalid: event contains invalid unicode$"):
        sign_event(Keys.generate(), 1, "bad \ud800 text")
    good = json.loads(worked_example().raw)
    good["content"] = "bad \udfff"
    with pytest.raises(EventError, match="invalid unicode"):
        parse_event(good)


def _valid() -> dict:
    return json.loads(worked_example().raw)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("id", "A" * 64, "invalid: id must be 64 lowercase hex characters"),
        ("pubkey", "abc", "invalid: pubkey must be 64 lowercase hex characters"),
        ("created_at", 1.0, "invalid: created_at must be an integer"),
        ("created_at", True, "invalid: created_at must be an integer"),
        ("created_at", "1767225600", "invalid: created_at must be an integer"),
        ("created_at", 2**53, "invalid: created_at must be an integer"),
        ("created_at", -1, "invalid: created_at must be an integer"),
        ("kind", 65536, "invalid: kind must be an integer between 0 and 65535"),
        ("kind", False, "invalid: kind must be an integer between 0 and 65535"),
        ("tags", [["h", 1]], "invalid: tags must be an array of arrays of strings"),
        ("tags", [[]], "invalid: tags must be an array of arrays of strings"),
        ("tags", {"h": "x"}, "invalid: tags must be an array of arrays of strings"),
        ("tags", [["t"]] * 2001, "invalid: too many tags (max 2000)"),
        ("tags", [["t", "x" * 8193]], "invalid: tag element too long (max 8192 bytes)"),
        ("tags", [["t", "é" * 4097]], "invalid: tag element too long (max 8192 bytes)"),
        ("content", None, "invalid: content must be a string"),
        ("content", "x" * 100_001, "invalid: content too long (max 100000 characters)"),
        ("sig", "00", "invalid: sig must be 128 lowercase hex characters"),
    ],
)
def test_field_validation_messages(field, value, message):
    event = _valid()
    event[field] = value
    with pytest.raises(EventError) as caught:
        parse_event(event)
    assert str(caught.value) == message


def test_missing_field_is_invalid():
    event = _valid()
    del event["kind"]
    with pytest.raises(EventError, match="^invalid: kind"):
        parse_event(event)


def test_tampered_content_and_signature():
    event = _valid()
    event["content"] = "changed"
    with pytest.raises(EventError, match="^invalid: event id does not match the event content$"):
        parse_event(event)
    event = _valid()
    event["sig"] = "0" * 128
    with pytest.raises(EventError, match="^invalid: bad signature$"):
        parse_event(event)
    # verify=False defers the crypto checks to the caller's pipeline.
    assert parse_event(event, verify=False).sig == "0" * 128


def test_event_size_limit():
    event = sign_event(Keys.generate(), 1, "x" * 99_000, [["t", "y" * 8000]] * 5)
    with pytest.raises(EventError, match=r"^invalid: event too large \(\d+ bytes > 131072\)$"):
        parse_event(json.loads(event.raw))


def test_extra_fields_are_ignored():
    event = _valid()
    event["extra"] = {"anything": 1}
    assert "extra" not in parse_event(event).raw


def test_non_object_is_refused():
    for junk in (None, [], "event", 5):
        with pytest.raises(EventError):
            parse_event(junk)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (0, "replaceable"),
        (3, "replaceable"),
        (1, "regular"),
        (9, "regular"),
        (10002, "replaceable"),
        (20001, "ephemeral"),
        (22242, "ephemeral"),
        (30174, "addressable"),
        (39002, "addressable"),
        (40000, "regular"),
    ],
)
def test_kind_classes(kind, expected):
    assert kind_class(kind) == expected


def test_d_tag_rules():
    keys = Keys.generate()
    assert d_tag(sign_event(keys, 30174, "", [])) == ""
    assert d_tag(sign_event(keys, 30174, "", [["d", "one"], ["d", "two"]])) == "one"
    assert d_tag(sign_event(keys, 30174, "", [["d"]])) == ""


def test_tag_helpers():
    event = worked_example()
    assert event.tag_values("p") == ["b" * 64]
    assert event.first_tag_value("h") == "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"
    assert event.first_tag_value("x") is None
    assert (
        compute_id(event.pubkey, event.created_at, event.kind, event.tags, event.content)
        == event.id
    )
