"""Threads and mentions in channels (protocol.md §9.6, §17 "Threads and mentions")."""

from orchestra.nostr.keys import Keys


async def test_thread_forms_and_reference_checks(connect):
    owner = await connect()
    channel = await owner.create_channel()
    other_channel = await owner.create_channel()
    h = ["h", channel]
    root = await owner.ok(9, "root", [h])
    reply = await owner.ok(9, "reply", [h, ["e", root.id, "", "reply"]])
    await owner.ok(9, "nested", [h, ["e", root.id, "", "root"], ["e", reply.id, "", "reply"]])
    await owner.ok(9, "nip10 root only", [h, ["e", root.id, "", "root"]])
    await owner.ok(9, "plain ref to anything", [h, ["e", Keys.generate().pubkey]])
    missing = "f" * 64
    cases = [
        ([h, ["e", missing, "", "reply"]], "invalid: thread reference not found"),
        (
            [["h", other_channel], ["e", root.id, "", "reply"]],
            "invalid: thread reference is in another channel",
        ),
        (
            [h, ["e", root.id, "", "reply"], ["e", reply.id, "", "reply"]],
            "invalid: at most one root and one reply e tag are allowed",
        ),
        ([h, ["e", "XYZ", "", "reply"]], "invalid: e tag value must be 64-character lowercase hex"),
        ([h, ["p", "not-hex"]], "invalid: p tag value must be 64-character lowercase hex"),
    ]
    for tags, message in cases:
        result = await owner.publish(owner.sign(9, "bad", tags))
        assert result[2:] == [False, message], tags
    events, _ = await owner.req("thread", {"#e": [root.id], "kinds": [9]})
    assert len(events) == 3


async def test_pipelined_reply_to_parent_in_same_batch(connect):
    owner = await connect()
    channel = await owner.create_channel()
    parent = owner.sign(9, "parent", [["h", channel]])
    child = owner.sign(9, "child", [["h", channel], ["e", parent.id, "", "reply"]])
    await owner.send(["EVENT", parent.to_dict()])
    await owner.send(["EVENT", child.to_dict()])
    for event in (parent, child):
        reply = await owner.next(lambda f, i=event.id: f[0] == "OK" and f[1] == i)
        assert reply[2] is True, reply


async def test_mentions_queryable_and_delivered_live(connect):
    owner = await connect()
    agent = await connect()
    channel = await owner.create_channel()
    await owner.ok(9000, "", [["h", channel], ["p", agent.keys.pubkey, "bot"]])
    await agent.req("wake", {"kinds": [9], "#p": [agent.keys.pubkey]})
    mention = await owner.ok(9, "@Agent please", [["h", channel], ["p", agent.keys.pubkey]])
    assert (await agent.next_event("wake"))["id"] == mention.id
    events, _ = await agent.req(
        "stored", {"kinds": [9], "#p": [agent.keys.pubkey], "#h": [channel]}
    )
    assert [e["id"] for e in events] == [mention.id]


async def test_generic_h_tagged_kind_follows_channel_rules(connect):
    owner = await connect()
    outsider = await connect()
    channel = await owner.create_channel("private")
    await owner.ok(7, "+", [["h", channel]])
    result = await outsider.publish(outsider.sign(7, "+", [["h", channel]]))
    assert result[2:] == [False, "restricted: not a channel member"]
    events, _ = await outsider.req("g", {"kinds": [7]})
    assert channel not in str(events)
