"""Buzz channels (protocol.md §9, §17 "Channels")."""

import time
import uuid

import httpx
import pytest

from orchestra.nostr.event import Event
from orchestra.nostr.keys import Keys


def relay_self(client) -> str:
    url = client.url.replace("ws://", "http://", 1)
    return httpx.get(url, headers={"Accept": "application/nostr+json"}).json()["self"]


async def state(client, channel: str, kind: int) -> dict:
    events, _ = await client.req(
        f"st{kind}{uuid.uuid4().hex[:6]}", {"kinds": [kind], "#d": [channel]}
    )
    assert len(events) == 1, events
    return events[0]


async def members(client, channel: str) -> dict[str, str]:
    return {t[1]: t[2] for t in (await state(client, channel, 39002))["tags"] if t[0] == "p"}


async def test_create_emits_state_events_signed_by_self(connect):
    owner = await connect()
    channel = str(uuid.uuid4())
    create = await owner.ok(
        9007,
        "",
        [
            ["h", channel],
            ["name", " fix-pr "],
            ["visibility", "private"],
            ["channel_type", "forum"],
            ["ttl", "3600"],
            ["about", "About it"],
        ],
    )
    me = owner.keys.pubkey
    relay_key = relay_self(owner)
    meta = await state(owner, channel, 39000)
    assert meta["pubkey"] == relay_key and meta["content"] == ""
    assert meta["tags"] == [
        ["d", channel],
        ["name", "fix-pr"],
        ["about", "About it"],
        ["private"],
        ["closed"],
        ["t", "forum"],
        ["ttl", "3600"],
        ["P", me],
        ["created_at", str(create.created_at)],
    ]
    admins = await state(owner, channel, 39001)
    assert admins["tags"] == [["d", channel], ["p", me, "owner"]]
    assert (await state(owner, channel, 39002))["tags"] == [["d", channel], ["p", me, "owner"]]
    for kind in (39000, 39001, 39002):
        event = await state(owner, channel, kind)
        parsed = Event(
            **{k: (tuple(tuple(t) for t in v) if k == "tags" else v) for k, v in event.items()}
        )
        assert parsed.has_valid_id() and parsed.has_valid_signature()


async def test_open_channel_defaults(connect):
    owner = await connect()
    channel = str(uuid.uuid4())
    await owner.ok(9007, "", [["h", channel], ["name", "general"]])
    meta = await state(owner, channel, 39000)
    assert meta["tags"][:4] == [["d", channel], ["name", "general"], ["public"], ["t", "stream"]]


@pytest.mark.parametrize(
    "tags, message",
    [
        ([["name", "x"]], "invalid: channel-scoped events must include an h tag"),
        ([["h", "NOT-A-UUID"], ["name", "x"]], "invalid: h tag must be a lowercase UUID"),
        ([["h", "{u}"]], "invalid: name is required"),
        (
            [["h", "{u}"], ["name", "   "]],
            "invalid: name must be 1-100 characters without control characters",
        ),
        (
            [["h", "{u}"], ["name", "a\nb"]],
            "invalid: name must be 1-100 characters without control characters",
        ),
        (
            [["h", "{u}"], ["name", "x" * 101]],
            "invalid: name must be 1-100 characters without control characters",
        ),
        (
            [["h", "{u}"], ["name", "x"], ["visibility", "secret"]],
            "invalid: visibility must be open or private",
        ),
        (
            [["h", "{u}"], ["name", "x"], ["channel_type", "chat"]],
            "invalid: channel_type must be stream or forum",
        ),
        (
            [["h", "{u}"], ["name", "x"], ["about", "a" * 2001]],
            "invalid: about must be at most 2000 characters",
        ),
        (
            [["h", "{u}"], ["name", "x"], ["ttl", "59"]],
            "invalid: ttl must be an integer between 60 and 31536000",
        ),
        (
            [["h", "{u}"], ["name", "x"], ["ttl", "abc"]],
            "invalid: ttl must be an integer between 60 and 31536000",
        ),
        ([["h", "{u}"], ["h", "{u}"], ["name", "x"]], "invalid: only one h tag is allowed"),
    ],
)
async def test_create_validation(connect, tags, message):
    owner = await connect()
    channel = str(uuid.uuid4())
    filled = [[v.replace("{u}", channel) for v in tag] for tag in tags]
    reply = await owner.publish(owner.sign(9007, "", filled))
    assert reply[2:] == [False, message]


async def test_create_existing_channel_refused(connect):
    owner = await connect()
    channel = await owner.create_channel()
    other = await connect()
    reply = await other.publish(other.sign(9007, "", [["h", channel], ["name", "dup"]]))
    assert reply[2:] == [False, "invalid: channel already exists"]


async def test_kind9_rules(connect):
    owner = await connect()
    channel = await owner.create_channel()
    reply = await owner.publish(owner.sign(9, "no h"))
    assert reply[2:] == [False, "invalid: channel-scoped events must include an h tag"]
    reply = await owner.publish(owner.sign(9, "two", [["h", channel], ["h", channel]]))
    assert reply[2:] == [False, "invalid: only one h tag is allowed"]
    reply = await owner.publish(owner.sign(9, "?", [["h", str(uuid.uuid4())]]))
    assert reply[2:] == [False, "invalid: unknown channel"]
    outsider = await connect()
    reply = await outsider.publish(outsider.sign(9, "let me in", [["h", channel]]))
    assert reply[2:] == [False, "restricted: not a channel member"]
    await owner.ok(9, "hello", [["h", channel]])


@pytest.mark.parametrize("kind", [9003, 9005, 9008, 9020])
async def test_unsupported_channel_operations(connect, kind):
    owner = await connect()
    channel = await owner.create_channel()
    reply = await owner.publish(owner.sign(kind, "", [["h", channel]]))
    assert reply[2:] == [False, f"invalid: unsupported channel operation (kind {kind})"]


async def test_put_user_roles_and_permission_matrix(connect):
    owner = await connect()
    admin = await connect()
    member = await connect()
    bot = Keys.generate().pubkey
    channel = await owner.create_channel("private")
    ch = [["h", channel]]
    await owner.ok(9000, "", [*ch, ["p", admin.keys.pubkey, "admin"]])
    await owner.ok(9000, "", [*ch, ["p", member.keys.pubkey]])
    assert (await members(owner, channel))[member.keys.pubkey] == "member"
    # An admin adds a bot and switches it between bot and member.
    await admin.ok(9000, "", [*ch, ["p", bot, "bot"]])
    await admin.ok(9000, "", [*ch, ["p", bot, "member"]])
    await admin.ok(9000, "back to bot", [*ch, ["p", bot, "bot"]])
    roster = await members(owner, channel)
    assert roster == {
        owner.keys.pubkey: "owner",
        admin.keys.pubkey: "admin",
        member.keys.pubkey: "member",
        bot: "bot",
    }
    state_tags = (await state(owner, channel, 39002))["tags"]
    assert [t[2] for t in state_tags[1:]] == ["owner", "admin", "member", "bot"]
    admins_tags = (await state(owner, channel, 39001))["tags"]
    assert admins_tags == [
        ["d", channel],
        ["p", owner.keys.pubkey, "owner"],
        ["p", admin.keys.pubkey, "admin"],
    ]
    cases = [
        (
            member,
            [["p", Keys.generate().pubkey]],
            "restricted: only the owner or an admin can add members",
        ),
        (
            admin,
            [["p", Keys.generate().pubkey, "admin"]],
            "restricted: only the owner can grant or revoke admin",
        ),
        (
            admin,
            [["p", owner.keys.pubkey, "member"]],
            "restricted: the owner's role cannot be changed",
        ),
        (
            owner,
            [["p", owner.keys.pubkey, "admin"]],
            "restricted: the owner's role cannot be changed",
        ),
        (owner, [["p", bot, "owner"]], "invalid: role must be member, bot or admin"),
        (owner, [["p", bot], ["p", member.keys.pubkey]], "invalid: exactly one p tag is required"),
        (owner, [], "invalid: exactly one p tag is required"),
    ]
    for actor, tags, message in cases:
        reply = await actor.publish(actor.sign(9000, "", [*ch, *tags]))
        assert reply[2:] == [False, message], (tags, reply)
    # Changing an admin's role needs the owner.
    second_admin = Keys.generate().pubkey
    await owner.ok(9000, "", [*ch, ["p", second_admin, "admin"]])
    reply = await admin.publish(admin.sign(9000, "", [*ch, ["p", second_admin, "member"]]))
    assert reply[2:] == [False, "restricted: only the owner can grant or revoke admin"]
    await owner.ok(9000, "", [*ch, ["p", second_admin, "member"]])


async def test_idempotent_add_and_remove_emit_no_new_state(connect):
    owner = await connect()
    channel = await owner.create_channel()
    target = Keys.generate().pubkey
    await owner.ok(9000, "", [["h", channel], ["p", target]])
    before = await state(owner, channel, 39002)
    await owner.ok(9000, "re-add", [["h", channel], ["p", target]])
    assert (await state(owner, channel, 39002))["id"] == before["id"]
    await owner.ok(9001, "", [["h", channel], ["p", target]])
    removed = await state(owner, channel, 39002)
    assert target not in {t[1] for t in removed["tags"]}
    await owner.ok(9001, "re-remove", [["h", channel], ["p", target]])
    assert (await state(owner, channel, 39002))["id"] == removed["id"]


async def test_remove_rules(connect):
    owner = await connect()
    admin = await connect()
    member = await connect()
    other = await connect()
    channel = await owner.create_channel()
    ch = [["h", channel]]
    await owner.ok(9000, "", [*ch, ["p", admin.keys.pubkey, "admin"]])
    for client in (member, other):
        await owner.ok(9000, "", [*ch, ["p", client.keys.pubkey]])
    cases = [
        (member, other.keys.pubkey, "restricted: only the owner or an admin can remove members"),
        (admin, owner.keys.pubkey, "restricted: the owner cannot be removed"),
        (owner, owner.keys.pubkey, "restricted: the owner cannot be removed"),
    ]
    for actor, target, message in cases:
        reply = await actor.publish(actor.sign(9001, "", [*ch, ["p", target]]))
        assert reply[2:] == [False, message]
    second_admin = await connect()
    await owner.ok(9000, "", [*ch, ["p", second_admin.keys.pubkey, "admin"]])
    reply = await admin.publish(admin.sign(9001, "", [*ch, ["p", second_admin.keys.pubkey]]))
    assert reply[2:] == [False, "restricted: only the owner can remove an admin"]
    await admin.ok(9001, "", [*ch, ["p", other.keys.pubkey]])
    await member.ok(9001, "", [*ch, ["p", member.keys.pubkey]])  # anyone may remove themselves
    await owner.ok(9001, "", [*ch, ["p", second_admin.keys.pubkey]])
    assert (await state(owner, channel, 39001))["tags"] == [
        ["d", channel],
        ["p", owner.keys.pubkey, "owner"],
        ["p", admin.keys.pubkey, "admin"],
    ]
    assert set(await members(owner, channel)) == {owner.keys.pubkey, admin.keys.pubkey}


async def test_join_and_leave(connect):
    owner = await connect()
    joiner = await connect()
    open_channel = await owner.create_channel("open")
    private_channel = await owner.create_channel("private")
    await joiner.ok(9021, "", [["h", open_channel]])
    assert (await members(owner, open_channel))[joiner.keys.pubkey] == "member"
    reply = await joiner.publish(joiner.sign(9021, "again", [["h", open_channel]]))
    assert reply[2:] == [False, "duplicate: already a member"]
    reply = await joiner.publish(joiner.sign(9021, "", [["h", private_channel]]))
    assert reply[2:] == [False, "restricted: channel is private; ask an admin to add you"]
    reply = await owner.publish(owner.sign(9022, "", [["h", open_channel]]))
    assert reply[2:] == [False, "restricted: the owner cannot leave the channel"]
    await joiner.ok(9022, "", [["h", open_channel]])
    assert joiner.keys.pubkey not in await members(owner, open_channel)
    reply = await joiner.publish(joiner.sign(9022, "again", [["h", open_channel]]))
    assert reply[2:] == [False, "restricted: not a channel member"]


async def test_edit_metadata_patch_semantics(connect):
    owner = await connect()
    member = await connect()
    channel = await owner.create_channel("open", about="first")
    ch = [["h", channel]]
    await owner.ok(9000, "", [*ch, ["p", member.keys.pubkey]])
    reply = await owner.publish(owner.sign(9002, "", ch))
    assert reply[2:] == [False, "invalid: no metadata fields to change"]
    reply = await member.publish(member.sign(9002, "", [*ch, ["name", "mine"]]))
    assert reply[2:] == [False, "restricted: only the owner or an admin can edit channel metadata"]
    await owner.ok(9002, "", [*ch, ["name", "renamed"]])
    meta = (await state(owner, channel, 39000))["tags"]
    assert ["name", "renamed"] in meta and ["about", "first"] in meta
    await owner.ok(9002, "", [*ch, ["about", ""], ["visibility", "private"], ["ttl", "120"]])
    meta = (await state(owner, channel, 39000))["tags"]
    assert [t[0] for t in meta] == ["d", "name", "private", "closed", "t", "ttl", "P", "created_at"]
    await owner.ok(9002, "", [*ch, ["ttl", "0"]])
    meta = (await state(owner, channel, 39000))["tags"]
    assert "ttl" not in [t[0] for t in meta]


async def test_archive_refuses_writes_and_unarchive_works(connect):
    owner = await connect()
    channel = await owner.create_channel()
    ch = [["h", channel]]
    await owner.ok(9002, "", [*ch, ["archived", "true"]])
    assert ["archived", "true"] in (await state(owner, channel, 39000))["tags"]
    for kind, tags in [(9, []), (9000, [["p", Keys.generate().pubkey]]), (9002, [["name", "x"]])]:
        reply = await owner.publish(owner.sign(kind, "x", [*ch, *tags]))
        assert reply[2:] == [False, "invalid: channel is archived"], kind
    before = await state(owner, channel, 39000)
    await owner.ok(9002, "again", [*ch, ["archived", "true"]])  # idempotent
    assert (await state(owner, channel, 39000))["id"] == before["id"]
    events, _ = await owner.req("read", {"#h": [channel]})
    assert events, "reading an archived channel still works"
    await owner.ok(9002, "", [*ch, ["archived", "false"], ["name", "back"]])
    meta = (await state(owner, channel, 39000))["tags"]
    assert ["archived", "true"] not in meta and ["name", "back"] in meta
    await owner.ok(9, "alive again", ch)


async def test_state_versions_within_one_second_replace_each_other(connect):
    owner = await connect()
    channel = await owner.create_channel()
    targets = [Keys.generate().pubkey for _ in range(4)]
    for target in targets:
        await owner.ok(9000, "", [["h", channel], ["p", target]])
    latest = await state(owner, channel, 39002)
    assert set(targets) <= {t[1] for t in latest["tags"]}
    assert latest["created_at"] >= int(time.time()) - 60


async def test_discovery_by_p_including_live(connect):
    owner = await connect()
    agent = await connect()
    channel = await owner.create_channel("private")
    await agent.req("mine", {"kinds": [39002], "#p": [agent.keys.pubkey]})
    await owner.ok(9000, "", [["h", channel], ["p", agent.keys.pubkey, "bot"]])
    live = await agent.next_event("mine")
    assert live["tags"][0] == ["d", channel]
    assert ["p", agent.keys.pubkey, "bot"] in live["tags"]
    events, _ = await agent.req("again", {"kinds": [39002], "#p": [agent.keys.pubkey]})
    assert [e["id"] for e in events] == [live["id"]]
    events, _ = await agent.req("meta", {"kinds": [39000], "#d": [channel]})
    assert len(events) == 1


async def test_state_events_follow_the_triggering_event(connect):
    owner = await connect()
    channel = await owner.create_channel()
    await owner.req("all", {"#h": [channel]}, {"#d": [channel], "kinds": [39002]})
    target = Keys.generate().pubkey
    add = await owner.ok(9000, "", [["h", channel], ["p", target]])
    first = await owner.next_event("all")
    second = await owner.next_event("all")
    assert first["id"] == add.id and second["kind"] == 39002
