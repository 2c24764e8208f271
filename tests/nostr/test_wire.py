"""Wire frames (protocol.md §3, §13, §14): builders, parsers, exact refusal texts, round trips."""

import json
import random

import orjson
import pytest

from orchestra.nostr import wire
from orchestra.nostr.event import sign_event
from orchestra.nostr.filters import FilterError, parse_filter
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event

KEYS = Keys.from_secret(bytes(31) + b"\x03")
EVENT = sign_event(KEYS, 9, 'Line one\nLine "two" — ok', [["h", "c"]], created_at=1, aux=bytes(32))


def refusal(frame: str | bytes, **limits: int) -> wire.FrameError:
    with pytest.raises(wire.FrameError) as caught:
        wire.parse_client_message(frame, **limits)
    return caught.value


# ---- client → relay: refusals in the relay's exact words ------------------------------------


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (b'["EVENT",{}]', "invalid: binary frames are not supported"),
        ("not json", "invalid: could not parse message as JSON"),
        ('["EVENT",NaN]', "invalid: could not parse message as JSON"),
        ('["REQ","s",{"limit":Infinity}]', "invalid: could not parse message as JSON"),
        ("[" * 5000 + "]" * 5000, "invalid: could not parse message as JSON"),
        ('["EVENT",', "invalid: could not parse message as JSON"),
        ("[]", "invalid: message must be a JSON array starting with a string"),
        ("[1]", "invalid: message must be a JSON array starting with a string"),
        ('{"EVENT":1}', "invalid: message must be a JSON array starting with a string"),
        ('"EVENT"', "invalid: message must be a JSON array starting with a string"),
        ('["COUNT","s",{}]', "invalid: unknown message type: COUNT"),
        ('[""]', "invalid: unknown message type: "),
        ('["event",{}]', "invalid: unknown message type: event"),
        ('["EVENT"]', "invalid: EVENT needs exactly one event object"),
        ('["EVENT",[]]', "invalid: EVENT needs exactly one event object"),
        ('["EVENT",{},{}]', "invalid: EVENT needs exactly one event object"),
        ('["REQ"]', "invalid: REQ needs a subscription id string"),
        ('["REQ",7,{}]', "invalid: REQ needs a subscription id string"),
        ('["CLOSE"]', "invalid: CLOSE needs a subscription id string"),
        ('["CLOSE",null]', "invalid: CLOSE needs a subscription id string"),
    ],
)
def test_frame_refusals_are_notices(frame, message) -> None:
    error = refusal(frame)
    assert (error.message, error.event_id, error.subid) == (message, None, None)
    assert error.reply() == json.dumps(
        ["NOTICE", message], ensure_ascii=False, separators=(",", ":")
    )


def test_an_event_frame_with_a_readable_id_is_answered_with_ok_false() -> None:
    error = refusal('["EVENT",{"id":"abc","kind":"x"},"extra"]')
    assert error.event_id == "abc"
    assert error.reply() == '["OK","abc",false,"invalid: EVENT needs exactly one event object"]'
    assert refusal('["EVENT",{"id":5},1]').event_id is None  # not a string: NOTICE


def test_subscription_id_length_is_answered_with_closed() -> None:
    for subid in ("", "x" * 65):
        error = refusal(json.dumps(["REQ", subid, {}]))
        assert error.subid == subid
        assert error.reply() == json.dumps(
            ["CLOSED", subid, "invalid: subscription id must be 1-64 characters"],
            separators=(",", ":"),
        )
    assert refusal('["REQ","123456789",{}]', max_subid_length=8).message == (
        "invalid: subscription id must be 1-8 characters"
    )
    assert wire.parse_client_message(json.dumps(["REQ", "x" * 64])) == wire.ClientReq("x" * 64, ())


def test_frame_size_counts_utf8_bytes_and_comes_first() -> None:
    limit = 100
    ascii_frame = '["EVENT"' + " " * 91 + "]"  # 100 bytes: allowed, then refused as EVENT
    assert len(ascii_frame) == limit
    assert refusal(ascii_frame, max_message_bytes=limit).message.startswith("invalid: EVENT")
    emoji = '["' + "😀" * 24 + '"]'  # 28 characters, 100 bytes
    assert refusal(emoji, max_message_bytes=limit).message.startswith("invalid: unknown")
    too_big = "x" + emoji  # not even JSON: the size check answers first
    assert refusal(too_big, max_message_bytes=limit).message == (
        "invalid: message too large (101 bytes > 100)"
    )
    surrogate = "\ud800" * 34  # lone surrogates count 3 bytes each (surrogatepass)
    assert refusal(surrogate, max_message_bytes=limit).message == (
        "invalid: message too large (102 bytes > 100)"
    )
    default = refusal(" " * (wire.MAX_MESSAGE_BYTES + 1))
    assert default.message == "invalid: message too large (262145 bytes > 262144)"


def test_what_orjson_refuses_but_json_allows_is_parsed() -> None:
    message = wire.parse_client_message('["EVENT",{"id":"\\ud800","created_at":1e400}]')
    assert isinstance(message, wire.ClientEvent)
    assert message.readable_id == "\ud800"
    # Integers beyond 64 bits (orjson reads them as floats) are still no integers.
    huge = wire.parse_client_message('["REQ","s",{"limit":123456789012345678901234567890}]')
    assert isinstance(huge, wire.ClientReq)
    with pytest.raises(wire.FrameError) as caught:
        huge.parse_filters()
    assert caught.value.message == "invalid: limit must be a non-negative integer"


def test_messages_parse_to_their_types() -> None:
    assert wire.parse_client_message(wire.client_event(EVENT)) == wire.ClientEvent(EVENT.to_dict())
    auth = make_auth_event(KEYS, "ws://localhost:3000", "c" * 64, created_at=5)
    parsed = wire.parse_client_message(wire.client_auth(auth))
    assert parsed == wire.ClientAuth(auth.to_dict()) and parsed.readable_id == auth.id
    assert wire.parse_client_message('["AUTH"]') == wire.ClientAuth(None)
    assert wire.parse_client_message('["AUTH","x",1]') == wire.ClientAuth("x")
    assert wire.parse_client_message('["CLOSE","s","extra"]') == wire.ClientClose("s")
    req = wire.parse_client_message('["REQ","s",{"kinds":[9]},{"#h":["c"]}]')
    assert req == wire.ClientReq("s", ({"kinds": [9]}, {"#h": ["c"]}))


# ---- REQ filters, checked after authentication --------------------------------------------


def test_req_filters_parse_with_the_relays_limits() -> None:
    req = wire.ClientReq("s", ({"kinds": [9], "limit": 900}, {"#h": ["c"]}))
    parsed = req.parse_filters(max_limit=50)
    assert parsed == [
        parse_filter({"kinds": [9], "limit": 900}, max_limit=50),
        parse_filter({"#h": ["c"]}, max_limit=50),
    ]
    assert parsed[0].limit == 50


@pytest.mark.parametrize(
    ("filters", "limits", "message"),
    [
        ((), {}, "invalid: REQ needs at least one filter"),
        (({},) * 21, {}, "invalid: too many filters (max 20)"),
        (({},) * 3, {"max_filters": 2}, "invalid: too many filters (max 2)"),
        (({"ids": ["a"] * 3},), {"max_values": 2}, "invalid: too many values in ids (max 2)"),
    ],
)
def test_req_filter_refusals_are_closed(filters, limits, message) -> None:
    with pytest.raises(wire.FrameError) as caught:
        wire.ClientReq("sub", filters).parse_filters(**limits)
    assert caught.value.subid == "sub" and caught.value.message == message
    assert caught.value.reply() == json.dumps(["CLOSED", "sub", message], separators=(",", ":"))


@pytest.mark.parametrize(
    "bad_filter", [[], "x", {"kinds": "9"}, {"#hh": ["x"]}, {"authors": ["A" * 64]}, {"since": -1}]
)
def test_a_filter_error_keeps_the_filter_modules_text(bad_filter) -> None:
    with pytest.raises(FilterError) as expected:
        parse_filter(bad_filter)
    with pytest.raises(wire.FrameError) as caught:
        wire.ClientReq("s", ({}, bad_filter)).parse_filters()
    assert caught.value.message == str(expected.value) and caught.value.subid == "s"


# ---- relay → client ------------------------------------------------------------------------


def test_relay_frames_are_compact_and_embed_raw_verbatim() -> None:
    assert wire.relay_auth("ch") == '["AUTH","ch"]'
    assert wire.relay_eose("s") == '["EOSE","s"]'
    assert wire.relay_ok("ab", True, "") == '["OK","ab",true,""]'
    assert wire.relay_closed("s", "restricted: x") == '["CLOSED","s","restricted: x"]'
    assert wire.relay_notice("é") == '["NOTICE","é"]'
    assert wire.relay_event("s", EVENT.raw) == '["EVENT","s",' + EVENT.raw + "]"
    assert wire.relay_event_prefix("s") == '["EVENT","s",'
    # A client's lone surrogate echoed back is \u-escaped (orjson cannot encode it).
    assert wire.relay_closed("\ud800", "m") == '["CLOSED","\\ud800","m"]'
    assert wire.relay_event("\udfff", "{}") == '["EVENT","\\udfff",{}]'


def test_relay_refusal_picks_ok_then_closed_then_notice() -> None:
    assert wire.relay_refusal("m", event_id="e", subid="s") == '["OK","e",false,"m"]'
    assert wire.relay_refusal("m", subid="s") == '["CLOSED","s","m"]'
    assert wire.relay_refusal("m") == '["NOTICE","m"]'


def test_relay_messages_parse_to_their_types() -> None:
    event = EVENT.to_dict()
    assert wire.parse_relay_message(wire.relay_event("s", EVENT.raw)) == wire.RelayEvent("s", event)
    assert wire.parse_relay_message('["EOSE","s"]') == wire.RelayEose("s")
    assert wire.parse_relay_message('["OK","e",false,"m"]') == wire.RelayOk("e", False, "m")
    assert wire.parse_relay_message('["CLOSED","s","m"]') == wire.RelayClosed("s", "m")
    assert wire.parse_relay_message('["NOTICE","m"]') == wire.RelayNotice("m")
    assert wire.parse_relay_message('["AUTH","c"]') == wire.RelayAuth("c")


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ("nope", "invalid: could not parse message as JSON"),
        ("[3]", "invalid: message must be a JSON array starting with a string"),
        ('["COUNT","s",{"count":1}]', "invalid: unknown message type: COUNT"),
        ('["EVENT",{}]', "invalid: EVENT needs a subscription id and an event object"),
        ('["EVENT",1,{}]', "invalid: EVENT needs a subscription id and an event object"),
        ('["EVENT","s",{},1]', "invalid: EVENT needs a subscription id and an event object"),
        ('["EOSE"]', "invalid: EOSE needs a subscription id"),
        ('["OK","e",1,""]', "invalid: OK needs an event id, true or false, and a message"),
        ('["OK","e",true]', "invalid: OK needs an event id, true or false, and a message"),
        ('["CLOSED","s",null]', "invalid: CLOSED needs a subscription id and a message"),
        ('["NOTICE",{}]', "invalid: NOTICE needs a message"),
        ('["AUTH",7]', "invalid: AUTH needs a challenge string"),
    ],
)
def test_malformed_relay_frames_are_refused_precisely(frame, message) -> None:
    with pytest.raises(wire.FrameError) as caught:
        wire.parse_relay_message(frame)
    assert caught.value.message == message


# ---- round trips (seeded, property style) --------------------------------------------------

# One lone surrogate only: a high one followed by a low one would read back as a pair.
_ALPHABET = 'aZ09 "\\/\n\t\x00\x1f\x7fé€😀\u2028\ud800'


def _text(rng: random.Random, low: int = 0, high: int = 20) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(low, high)))


def _filter(rng: random.Random) -> dict:
    return {
        "kinds": [rng.randint(0, 65535) for _ in range(rng.randint(0, 3))],
        f"#{rng.choice('hpdZ')}": [_text(rng) for _ in range(rng.randint(0, 3))],
        "limit": rng.randint(0, 2**63),
    }


@pytest.mark.parametrize("seed", range(100))
def test_every_frame_survives_a_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    subid = _text(rng, 1, 64)
    message = _text(rng)
    event = sign_event(
        KEYS,
        rng.randint(0, 65535),
        _text(rng).replace("\ud800", ""),  # an event with a lone surrogate is not signable
        [["t", str(rng.random())]],
        created_at=rng.randint(0, 2**53 - 1),
    )
    filters = [_filter(rng) for _ in range(rng.randint(0, 4))]
    accepted = rng.random() < 0.5

    assert wire.parse_client_message(wire.client_event(event)) == wire.ClientEvent(event.to_dict())
    assert wire.parse_client_message(wire.client_auth(event)) == wire.ClientAuth(event.to_dict())
    assert wire.parse_client_message(wire.client_req(subid, filters)) == wire.ClientReq(
        subid, tuple(filters)
    )
    assert wire.parse_client_message(wire.client_close(subid)) == wire.ClientClose(subid)

    relay_frames = {
        wire.relay_event(subid, event.raw): wire.RelayEvent(subid, event.to_dict()),
        wire.relay_eose(subid): wire.RelayEose(subid),
        wire.relay_ok(event.id, accepted, message): wire.RelayOk(event.id, accepted, message),
        wire.relay_closed(subid, message): wire.RelayClosed(subid, message),
        wire.relay_notice(message): wire.RelayNotice(message),
        wire.relay_auth(message): wire.RelayAuth(message),
    }
    for frame, parsed in relay_frames.items():
        assert wire.parse_relay_message(frame) == parsed
    # A refusal frame reads back as the message the relay meant.
    error = wire.FrameError(message, event_id=event.id if accepted else None, subid=subid)
    expected = (
        wire.RelayOk(event.id, False, message) if accepted else wire.RelayClosed(subid, message)
    )
    assert wire.parse_relay_message(error.reply()) == expected


def test_builders_emit_what_orjson_would_when_it_can() -> None:
    filters = [{"kinds": [9], "#h": ["c"], "limit": 5}]
    assert wire.client_req("s", filters) == orjson.dumps(["REQ", "s", *filters]).decode()
    assert wire.client_close("s") == '["CLOSE","s"]'
    assert wire.client_event(EVENT) == orjson.dumps(["EVENT", EVENT.to_dict()]).decode()
