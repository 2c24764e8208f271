"""Persistence across a relay restart (protocol.md §15.5, §17 "Restart")."""

import asyncio

import httpx

from orchestra.nostr.memory import blinded_slug, encode_entry
from orchestra.nostr.nip44 import conversation_key, encrypt


async def relay_self(http_url: str) -> str:
    response = await asyncio.to_thread(
        httpx.get, http_url, headers={"Accept": "application/nostr+json"}
    )
    return response.json()["self"]


async def test_everything_survives_a_restart(start_relay, connect):
    relay = start_relay()
    owner = await connect(relay.url)
    member = await connect(relay.url)
    channel = await owner.create_channel("private")
    await owner.ok(9000, "", [["h", channel], ["p", member.keys.pubkey, "admin"]])
    message = await owner.ok(9, "persisted", [["h", channel]])
    profile = await owner.ok(0, '{"name":"Owner"}')
    keys = owner.keys
    memory = await owner.ok(
        30174,
        encrypt(encode_entry("core", "v"), conversation_key(keys.secret, keys.pubkey)),
        [["d", blinded_slug(keys, "core")]],
    )
    self_before = await relay_self(relay.http_url)
    states_before, _ = await owner.req("st", {"#d": [channel], "kinds": [39000, 39001, 39002]})
    assert len(states_before) == 3

    relay.restart()

    self_after = await relay_self(relay.http_url)
    assert self_after == self_before, "the generated relay key is stored and reused"
    owner = await connect(relay.url, keys=keys)
    member = await connect(relay.url, keys=member.keys)
    outsider = await connect(relay.url)
    events, _ = await owner.req("msg", {"#h": [channel], "kinds": [9]})
    assert [e["id"] for e in events] == [message.id]
    events, _ = await owner.req("mine", {"authors": [keys.pubkey], "kinds": [0, 30174]})
    assert {e["id"] for e in events} == {profile.id, memory.id}
    states_after, _ = await owner.req("st", {"#d": [channel], "kinds": [39000, 39001, 39002]})
    assert sorted(e["id"] for e in states_after) == sorted(e["id"] for e in states_before)
    # Membership and privacy came back from the database.
    _, end = await outsider.req("h", {"#h": [channel]})
    assert end[2] == "restricted: not a channel member"
    await member.ok(9, "admin still here", [["h", channel]])
    await member.ok(9000, "", [["h", channel], ["p", outsider.keys.pubkey]])
    # New state versions replace the old ones and are strictly newer.
    events, _ = await owner.req("members", {"#d": [channel], "kinds": [39002]})
    assert len(events) == 1
    old_members = next(e for e in states_before if e["kind"] == 39002)
    assert events[0]["created_at"] > old_members["created_at"]
    assert outsider.keys.pubkey in {t[1] for t in events[0]["tags"] if t[0] == "p"}


async def test_configured_relay_key_is_used(start_relay):
    secret = "0000000000000000000000000000000000000000000000000000000000000003"
    relay = start_relay(env={"BUZZ_RELAY_PRIVATE_KEY": secret})
    assert (
        await relay_self(relay.http_url)
        == "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9"
    )
    assert secret not in relay.log_tail(200)
