"""Private channels and the read rule (protocol.md §10, §17 "Privacy")."""

from orchestra.nostr.keys import Keys
from orchestra.nostr.memory import blinded_slug, encode_entry
from orchestra.nostr.nip44 import conversation_key, encrypt


async def private_setup(connect):
    owner = await connect()
    member = await connect()
    outsider = await connect()
    channel = await owner.create_channel("private")
    await owner.ok(9000, "", [["h", channel], ["p", member.keys.pubkey]])
    return owner, member, outsider, channel


async def test_non_member_req_with_h_is_closed(connect):
    owner, member, outsider, channel = await private_setup(connect)
    await owner.ok(9, "secret", [["h", channel]])
    events, end = await outsider.req("h", {"#h": [channel]})
    assert events == [] and end == ["CLOSED", "h", "restricted: not a channel member"]
    events, end = await member.req("h", {"#h": [channel]})
    assert end == ["EOSE", "h"] and [e["content"] for e in events if e["kind"] == 9] == ["secret"]


async def test_non_member_global_subscriptions_never_see_private_events(connect):
    owner, member, outsider, channel = await private_setup(connect)
    open_channel = await owner.create_channel("open")
    secret = await owner.ok(9, "history secret", [["h", channel]])
    for subid, flt in [
        ("k9", {"kinds": [9]}),
        ("k39000", {"kinds": [39000]}),
        ("ids", {"ids": [secret.id]}),
        ("d", {"#d": [channel]}),
        ("author", {"authors": [owner.keys.pubkey]}),
    ]:
        events, end = await outsider.req(subid, flt)
        assert end[0] == "EOSE"
        leaked = [e for e in events if channel in {t[1] for t in e["tags"] if len(t) > 1}]
        assert leaked == [], (subid, leaked)
    # Live: the outsider keeps its global subscriptions; a private message, a private state
    # change and then an open marker are published; only the marker may arrive.
    await owner.ok(9, "live secret", [["h", channel]])
    await owner.ok(9002, "", [["h", channel], ["name", "renamed secretly"]])
    marker = await owner.ok(9, "open marker", [["h", open_channel]])
    got = await outsider.next_event("k9")
    assert got["id"] == marker.id
    leaked = [f for f in outsider.inbox if f[0] == "EVENT" and channel in str(f[2]["tags"])]
    assert leaked == []
    # The member does receive the live private events.
    events, _ = await member.req("m", {"kinds": [9], "#h": [channel]})
    assert {e["content"] for e in events} == {"history secret", "live secret"}


async def test_removed_member_stops_receiving_immediately(connect):
    owner, member, _, channel = await private_setup(connect)
    open_channel = await owner.create_channel("open")
    await member.req("all", {"kinds": [9]})
    first = await owner.ok(9, "before removal", [["h", channel]])
    assert (await member.next_event("all"))["id"] == first.id
    await owner.ok(9001, "", [["h", channel], ["p", member.keys.pubkey]])
    await owner.ok(9, "after removal", [["h", channel]])
    marker = await owner.ok(9, "marker", [["h", open_channel]])
    assert (await member.next_event("all"))["id"] == marker.id
    _, end = await member.req("h", {"#h": [channel]})
    assert end == ["CLOSED", "h", "restricted: not a channel member"]


async def test_visibility_change_applies_to_readers_immediately(connect):
    owner = await connect()
    reader = await connect()
    channel = await owner.create_channel("open")
    await owner.ok(9, "was public", [["h", channel]])
    events, _ = await reader.req("open", {"#h": [channel], "kinds": [9]})
    assert len(events) == 1
    await owner.ok(9002, "", [["h", channel], ["visibility", "private"]])
    _, end = await reader.req("closed", {"#h": [channel]})
    assert end[2] == "restricted: not a channel member"
    events, _ = await reader.req("global", {"kinds": [9], "authors": [owner.keys.pubkey]})
    assert events == []


async def test_open_channel_readable_by_non_members(connect):
    owner = await connect()
    reader = await connect()
    channel = await owner.create_channel("open")
    message = await owner.ok(9, "public", [["h", channel]])
    events, _ = await reader.req("o", {"#h": [channel], "kinds": [9]})
    assert [e["id"] for e in events] == [message.id]
    await reader.req("live", {"#h": [channel]})
    live = await owner.ok(9, "public live", [["h", channel]])
    assert (await reader.next_event("live"))["id"] == live.id


async def test_private_channel_limit_counts_only_readable_events(connect):
    owner, _, outsider, channel = await private_setup(connect)
    for i in range(3):
        await owner.ok(1, f"public note {i}")
        await owner.ok(9, f"secret {i}", [["h", channel]])
    events, _ = await outsider.req("lim", {"authors": [owner.keys.pubkey], "limit": 3})
    assert [e["kind"] for e in events] == [1, 1, 1]


async def test_memory_readable_only_by_author(connect):
    agent = await connect()
    other = await connect()
    keys = agent.keys
    d = blinded_slug(keys, "core")
    content = encrypt(encode_entry("core", "remember"), conversation_key(keys.secret, keys.pubkey))
    memory = await agent.ok(30174, content, [["d", d]])
    await other.req("live", {"kinds": [30174]})
    for subid, flt in [
        ("ids", {"ids": [memory.id]}),
        ("kinds", {"kinds": [30174]}),
        ("author", {"authors": [keys.pubkey]}),
        ("d", {"#d": [d]}),
    ]:
        events, _ = await other.req(subid, flt)
        assert events == [], subid
        events, _ = await agent.req(subid, flt)
        assert [e["id"] for e in events] == [memory.id], subid
    newer = encrypt(encode_entry("core", "v2"), conversation_key(keys.secret, keys.pubkey))
    await agent.ok(30174, newer, [["d", d]], created_at=memory.created_at + 1)
    marker = await agent.ok(1, "marker")
    await other.req("m", {"ids": [marker.id]})
    assert not [f for f in other.inbox if f[0] == "EVENT" and f[1] == "live"]


async def test_memory_validation(connect):
    agent = await connect()
    d = blinded_slug(agent.keys, "x")
    reply = await agent.publish(agent.sign(30174, "AgAA", [["d", "short"]]))
    assert reply[2:] == [
        False,
        "invalid: agent memory events need exactly one d tag of 64 lowercase hex",
    ]
    reply = await agent.publish(agent.sign(30174, "AgAA", [["d", d], ["d", d]]))
    assert reply[2:] == [
        False,
        "invalid: agent memory events need exactly one d tag of 64 lowercase hex",
    ]
    reply = await agent.publish(agent.sign(30174, "not base64 at all " * 10, [["d", d]]))
    assert reply[2:] == [False, "invalid: agent memory content must be NIP-44 v2 ciphertext"]


async def test_profiles_readable_by_everyone_and_validated(connect):
    alice = await connect()
    bob = await connect()
    reply = await alice.publish(alice.sign(0, "[1, 2]"))
    assert reply[2:] == [False, "invalid: kind 0 content must be a JSON object"]
    reply = await alice.publish(alice.sign(0, "not json"))
    assert reply[2:] == [False, "invalid: kind 0 content must be a JSON object"]
    profile = await alice.ok(0, '{"name":"Alice","bot":false}')
    events, _ = await bob.req("p", {"kinds": [0], "authors": [alice.keys.pubkey]})
    assert [e["id"] for e in events] == [profile.id]
    stranger = Keys.generate()
    assert stranger.pubkey != alice.keys.pubkey
