"""NIP-01 core behaviour (protocol.md §3-§6, §17 "NIP-01 core")."""

import time

import orjson
import pytest

from orchestra.nostr.event import compute_id, sign_event
from orchestra.nostr.keys import Keys


def now() -> int:
    return int(time.time())


async def test_ok_for_event_and_duplicate_is_ok_true_with_prefix(connect):
    alice = await connect()
    note = alice.sign(1, "hi")
    assert await alice.publish(note) == ["OK", note.id, True, ""]
    assert await alice.publish(note) == ["OK", note.id, True, "duplicate: already have this event"]


async def test_bad_id_and_bad_signature_are_invalid(connect):
    alice = await connect()
    note = alice.sign(1, "hi").to_dict()
    wrong_id = {**note, "content": "changed"}
    reply = await alice.publish(wrong_id)
    assert reply[2:] == [False, "invalid: event id does not match the event content"]
    other = sign_event(Keys.generate(), 1, "hi", created_at=note["created_at"])
    forged = {**note, "sig": other.sig}
    reply = await alice.publish(forged)
    assert reply[2:] == [False, "invalid: bad signature"]


@pytest.mark.parametrize("bad", [1.0, True, "123", None, -1, 2**53])
async def test_non_integer_created_at_is_rejected(connect, bad):
    alice = await connect()
    event = alice.sign(1, "x").to_dict()
    event["created_at"] = bad
    reply = await alice.publish(event)
    assert reply[2:] == [False, "invalid: created_at must be an integer"]


@pytest.mark.parametrize("bad", [1.0, False, "1", 70000])
async def test_non_integer_kind_is_rejected(connect, bad):
    alice = await connect()
    event = alice.sign(1, "x").to_dict()
    event["kind"] = bad
    reply = await alice.publish(event)
    assert reply[2] is False and reply[3].startswith("invalid: kind")


async def test_created_at_window(connect):
    alice = await connect()
    reply = await alice.publish(alice.sign(1, "old", created_at=now() - 3700))
    assert reply[2:] == [False, "invalid: created_at is too old"]
    reply = await alice.publish(alice.sign(1, "future", created_at=now() + 1000))
    assert reply[2:] == [False, "invalid: created_at is too far in the future"]


async def test_pubkey_must_match_authenticated_key(connect):
    alice = await connect()
    stranger = sign_event(Keys.generate(), 1, "not mine")
    reply = await alice.publish(stranger)
    assert reply[2:] == [False, "restricted: event pubkey does not match the authenticated pubkey"]


async def test_auth_and_relay_only_kinds_are_refused(connect):
    alice = await connect()
    reply = await alice.publish(alice.sign(22242, "", [["relay", alice.url], ["challenge", "x"]]))
    assert reply[2:] == [False, "invalid: AUTH events must be sent with the AUTH message"]
    for kind in (39000, 39002, 39009):
        reply = await alice.publish(alice.sign(kind, "", [["d", "x"]]))
        assert reply[2:] == [False, "restricted: relay-only kind"]


async def test_eose_even_when_nothing_matches(connect):
    alice = await connect()
    events, end = await alice.req("empty", {"authors": [Keys.generate().pubkey]})
    assert events == [] and end == ["EOSE", "empty"]


async def test_close_stops_delivery(connect):
    alice = await connect()
    bob = await connect()
    await bob.req("live", {"authors": [alice.keys.pubkey]})
    first = await alice.ok(1, "one")
    assert (await bob.next_event("live"))["id"] == first.id
    await bob.send(["CLOSE", "live"])
    await bob.req("marker", {"authors": [alice.keys.pubkey], "kinds": [2]})
    await alice.ok(1, "two")
    marker = await alice.ok(2, "marker")
    # Deliveries are in commit order: once the marker arrives, "two" would have arrived first.
    assert (await bob.next_event("marker"))["id"] == marker.id
    assert not [f for f in bob.inbox if f[0] == "EVENT" and f[1] == "live"]


async def test_req_with_same_id_replaces_subscription(connect):
    alice = await connect()
    await alice.req("s", {"authors": [alice.keys.pubkey], "kinds": [1]})
    await alice.req("s", {"authors": [alice.keys.pubkey], "kinds": [2]})
    await alice.ok(1, "kind one")
    two = await alice.ok(2, "kind two")
    assert (await alice.next_event("s"))["id"] == two.id
    assert not [f for f in alice.inbox if f[0] == "EVENT"]


async def test_filters_or_across_and_within(connect):
    alice = await connect()
    me = alice.keys.pubkey
    a = await alice.ok(1, "a", [["t", "x"]])
    b = await alice.ok(2, "b", [["t", "y"]])
    await alice.ok(3, "c", [["t", "x"]])
    events, _ = await alice.req("s", {"authors": [me], "kinds": [1, 3], "#t": ["y"]})
    assert events == []
    events, _ = await alice.req(
        "s2", {"authors": [me], "kinds": [1], "#t": ["x"]}, {"authors": [me], "kinds": [2]}
    )
    assert {e["id"] for e in events} == {a.id, b.id}


async def test_since_until_inclusive(connect):
    alice = await connect()
    me = alice.keys.pubkey
    base = now() - 100
    stamps = [base, base + 1, base + 2]
    ids = [(await alice.ok(1, f"t{t}", created_at=t)).id for t in stamps]
    events, _ = await alice.req("one", {"authors": [me], "since": base + 1, "until": base + 1})
    assert [e["id"] for e in events] == [ids[1]]
    events, _ = await alice.req("range", {"authors": [me], "since": base, "until": base + 1})
    assert [e["id"] for e in events] == [ids[1], ids[0]]
    events, _ = await alice.req("inverted", {"authors": [me], "since": base + 2, "until": base})
    assert events == []


async def test_limit_newest_first_ties_by_lowest_id(connect):
    alice = await connect()
    me = alice.keys.pubkey
    base = now() - 50
    same_second = [await alice.ok(1, f"tie {i}", created_at=base) for i in range(4)]
    newest = await alice.ok(1, "newest", created_at=base + 5)
    await alice.ok(1, "oldest", created_at=base - 5)
    events, _ = await alice.req("s", {"authors": [me], "limit": 3})
    tie_ids = sorted(e.id for e in same_second)
    assert [e["id"] for e in events] == [newest.id, *tie_ids[:2]]
    events, _ = await alice.req("all", {"authors": [me]})
    assert len(events) == 6
    created = [(-e["created_at"], e["id"]) for e in events]
    assert created == sorted(created)


async def test_limit_zero_sends_only_eose_then_live(connect):
    alice = await connect()
    await alice.ok(1, "stored")
    events, end = await alice.req("s", {"authors": [alice.keys.pubkey], "limit": 0})
    assert events == [] and end[0] == "EOSE"
    live = await alice.ok(1, "live")
    assert (await alice.next_event("s"))["id"] == live.id


async def test_tag_filter_matches_first_value_only(connect):
    alice = await connect()
    me = alice.keys.pubkey
    hit = await alice.ok(1, "", [["t", "alpha", "beta"]])
    events, _ = await alice.req("a", {"authors": [me], "#t": ["alpha"]})
    assert [e["id"] for e in events] == [hit.id]
    events, _ = await alice.req("b", {"authors": [me], "#t": ["beta"]})
    assert events == []


async def test_mentions_queryable_with_p(connect):
    alice = await connect()
    bob = Keys.generate()
    mention = await alice.ok(1, "hi bob", [["p", bob.pubkey]])
    events, _ = await alice.req("m", {"#p": [bob.pubkey]})
    assert [e["id"] for e in events] == [mention.id]


@pytest.mark.parametrize(
    "flt, message",
    [
        ({"ids": ["ABC"]}, "invalid: ids must be an array of 64 lowercase hex strings"),
        ({"authors": ["a" * 63]}, "invalid: authors must be an array of 64 lowercase hex strings"),
        ({"#p": ["A" * 64]}, "invalid: #p must be an array of 64 lowercase hex strings"),
        ({"#hh": ["x"]}, "invalid: tag filter keys must be # plus one letter"),
        ({"kinds": ["1"]}, "invalid: kinds must be an array of integers between 0 and 65535"),
        ({"limit": -1}, "invalid: limit must be a non-negative integer"),
        ({"since": 1.5}, "invalid: since must be a non-negative integer"),
        ({"ids": ["a" * 64] * 1001}, "invalid: too many values in ids (max 1000)"),
    ],
)
async def test_filter_errors_closed(connect, flt, message):
    alice = await connect()
    _events, end = await alice.req("bad", flt)
    assert end == ["CLOSED", "bad", message]


async def test_empty_lists_match_nothing(connect):
    alice = await connect()
    await alice.ok(1, "x")
    for flt in ({"authors": []}, {"kinds": [], "authors": [alice.keys.pubkey]}, {"#t": []}):
        events, end = await alice.req("e", flt)
        assert events == [] and end[0] == "EOSE"


async def test_subscription_limits(connect):
    alice = await connect()
    _events, end = await alice.req("many", *[{"limit": 0}] * 21)
    assert end == ["CLOSED", "many", "invalid: too many filters (max 20)"]
    _events, end = await alice.req("x" * 65, {"limit": 0})
    assert end == ["CLOSED", "x" * 65, "invalid: subscription id must be 1-64 characters"]
    for i in range(1024):
        await alice.send(["REQ", f"s{i}", {"limit": 0}])
    await alice.next(lambda f: f == ["EOSE", "s1023"])
    _events, end = await alice.req("one-too-many", {"limit": 0})
    assert end == ["CLOSED", "one-too-many", "restricted: too many subscriptions (max 1024)"]
    # Replacing an existing subscription id is still allowed at the cap.
    _events, end = await alice.req("s0", {"limit": 0})
    assert end == ["EOSE", "s0"]


async def test_replaceable_newer_wins_and_older_is_refused(connect):
    alice = await connect()
    me = alice.keys.pubkey
    base = now() - 10
    first = await alice.ok(10002, "v1", created_at=base)
    second = await alice.ok(10002, "v2", created_at=base + 1)
    older = alice.sign(10002, "v0", created_at=base - 1)
    reply = await alice.publish(older)
    assert reply[2:] == [False, "duplicate: a newer version of this event exists"]
    events, _ = await alice.req("r", {"authors": [me], "kinds": [10002]})
    assert [e["id"] for e in events] == [second.id]
    assert first.id != second.id


async def test_equal_timestamp_lower_id_wins(connect):
    alice = await connect()
    me = alice.keys.pubkey
    stamp = now() - 5
    candidates = sorted(
        (alice.sign(30001, f"v{i}", [["d", "slot"]], created_at=stamp) for i in range(2)),
        key=lambda e: e.id,
    )
    low, high = candidates
    assert (await alice.publish(high))[2] is True
    assert (await alice.publish(low))[2] is True
    reply = await alice.publish(alice.sign(30001, "v9", [["d", "slot"]], created_at=stamp))
    events, _ = await alice.req("a", {"authors": [me], "kinds": [30001]})
    winner = min([low.id, reply[1]]) if reply[2] else low.id
    assert [e["id"] for e in events] == [winner]
    reply = await alice.publish(high)
    assert reply[2:] == [False, "duplicate: a newer version of this event exists"]


async def test_addressable_keyed_by_d_tag(connect):
    alice = await connect()
    me = alice.keys.pubkey
    a = await alice.ok(30001, "a", [["d", "one"]])
    b = await alice.ok(30001, "b", [["d", "two"]])
    events, _ = await alice.req("a", {"authors": [me], "kinds": [30001]})
    assert {e["id"] for e in events} == {a.id, b.id}


async def test_ephemeral_delivered_not_stored(connect):
    alice = await connect()
    bob = await connect()
    await bob.req("live", {"authors": [alice.keys.pubkey]})
    flash = await alice.ok(20001, "flash")
    assert (await bob.next_event("live"))["id"] == flash.id
    events, _ = await bob.req("stored", {"ids": [flash.id]})
    assert events == []


async def test_served_frames_embed_canonical_raw(connect):
    alice = await connect()
    tricky = 'quote " backslash \\ nl \n tab \t ctrl \x01 del \x7f ls \u2028 emoji 😀 slash /'
    event = await alice.ok(1, tricky, [["t", "é"]])
    await alice.send(["REQ", "raw", {"ids": [event.id]}])
    raw_frame = await alice.ws.recv()
    assert raw_frame == f'["EVENT","raw",{event.raw}]'


async def test_json_escapes_match_nostr_sdk_ids(connect):
    nostr_sdk = pytest.importorskip(
        "nostr_sdk", reason="nostr-sdk is the independent id implementation"
    )
    alice = await connect()
    content = 'a"b\\c\nd\re\tf\x08g\x0ch\x01i\x1fj\x7fk\u2028l/m😀'
    event = await alice.ok(1, content)
    sdk_event = nostr_sdk.Event.from_json(event.raw)
    assert sdk_event.id().to_hex() == event.id
    assert sdk_event.verify()


async def test_lone_surrogate_rejected(connect):
    alice = await connect()
    keys = alice.keys
    frame = (
        '["EVENT",{"id":"'
        + "a" * 64
        + '","pubkey":"'
        + keys.pubkey
        + '","created_at":'
        + str(now())
        + ',"kind":1,"tags":[],"content":"bad \\ud800 surrogate","sig":"'
        + "b" * 128
        + '"}]'
    )
    await alice.send(frame)
    reply = await alice.next(lambda f: f[0] in ("OK", "NOTICE"))
    assert reply == ["OK", "a" * 64, False, "invalid: event contains invalid unicode"]


async def test_no_gap_or_duplicate_between_stored_and_live(connect):
    alice = await connect()
    bob = await connect()
    me = alice.keys.pubkey
    stored = [await alice.ok(1, f"s{i}") for i in range(5)]
    # Publish while bob subscribes: every event must arrive exactly once, stored or live.
    publishing = [alice.sign(1, f"l{i}") for i in range(30)]
    for event in publishing:
        await alice.send(["EVENT", event.to_dict()])
    events, _ = await bob.req("s", {"authors": [me]})
    for event in publishing:
        await alice.next(lambda f, i=event.id: f[0] == "OK" and f[1] == i)
    marker = await alice.ok(2, "marker")
    seen = [e["id"] for e in events]
    while True:
        got = await bob.next_event("s")
        if got["id"] == marker.id:
            break
        seen.append(got["id"])
    assert sorted(seen) == sorted(e.id for e in [*stored, *publishing])


async def test_oversized_frame_notice_and_socket_keeps_working(connect):
    alice = await connect()
    frame = '["EVENT","' + "é" * 150_000 + '"]'
    await alice.send(frame)
    size = len(frame.encode())
    assert await alice.next() == ["NOTICE", f"invalid: message too large ({size} bytes > 262144)"]
    await alice.ok(1, "still here")


async def test_event_too_large(connect):
    alice = await connect()
    tags = [["t", "x" * 8000] for _ in range(17)]
    event = alice.sign(1, "", tags)
    size = len(event.raw.encode())
    reply = await alice.publish(event)
    assert reply[2:] == [False, f"invalid: event too large ({size} bytes > 131072)"]


@pytest.mark.parametrize(
    "frame, notice",
    [
        ("not json", "invalid: could not parse message as JSON"),
        ("{}", "invalid: message must be a JSON array starting with a string"),
        ("[1, 2]", "invalid: message must be a JSON array starting with a string"),
        ('["COUNT","x",{}]', "invalid: unknown message type: COUNT"),
        ('["EVENT","notanobject"]', "invalid: EVENT needs exactly one event object"),
        ('["EVENT",{"id":12}]', "invalid: id must be 64 lowercase hex characters"),
    ],
)
async def test_malformed_frames_notice(connect, frame, notice):
    alice = await connect()
    await alice.send(frame)
    assert await alice.next() == ["NOTICE", notice]
    await alice.ok(1, "still usable")


async def test_malformed_event_with_readable_id_gets_ok_false(connect):
    alice = await connect()
    await alice.send(orjson.dumps(["EVENT", {"id": "abc", "kind": 1}]).decode())
    reply = await alice.next()
    assert reply == ["OK", "abc", False, "invalid: id must be 64 lowercase hex characters"]
    await alice.send(orjson.dumps(["EVENT", {"id": "abc"}, {"extra": 1}]).decode())
    assert await alice.next() == [
        "OK",
        "abc",
        False,
        "invalid: EVENT needs exactly one event object",
    ]


async def test_binary_frame_notice(connect):
    alice = await connect()
    await alice.send(b'["REQ","x",{}]')
    assert await alice.next() == ["NOTICE", "invalid: binary frames are not supported"]


async def test_compute_id_agrees_with_served_event(connect):
    alice = await connect()
    event = await alice.ok(1, "check", [["t", "a"]])
    events, _ = await alice.req("c", {"ids": [event.id]})
    served = events[0]
    assert (
        compute_id(
            served["pubkey"],
            served["created_at"],
            served["kind"],
            served["tags"],
            served["content"],
        )
        == event.id
    )
