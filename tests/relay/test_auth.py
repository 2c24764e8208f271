"""NIP-42 authentication (protocol.md §7, §17 "NIP-42")."""

import time

import pytest

from orchestra.nostr.event import sign_event
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event


async def auth_reply(client, event):
    await client.send(["AUTH", event.to_dict() if hasattr(event, "to_dict") else event])
    return await client.next(lambda f: f[0] == "OK")


async def test_challenge_on_connect_and_ok_for_auth(connect):
    client = await connect(auth=False)
    assert len(client.challenge) == 64 and int(client.challenge, 16) >= 0
    other = await connect(auth=False)
    assert other.challenge != client.challenge
    reply = await client.auth()
    assert reply[2:] == [True, ""]


async def test_req_and_event_before_auth(connect):
    client = await connect(auth=False)
    _events, end = await client.req("s", {"limit": 1})
    assert end == ["CLOSED", "s", "auth-required: authenticate first"]
    note = sign_event(Keys.generate(), 1, "x")
    reply = await client.publish(note)
    assert reply == ["OK", note.id, False, "auth-required: authenticate first"]


def _auth_cases(challenge: str, url: str) -> list[tuple[object, str]]:
    keys = Keys.generate()
    stamp = int(time.time())
    good_tags = [["relay", url], ["challenge", challenge]]
    return [
        (sign_event(keys, 1, "", good_tags), "kind must be 22242"),
        (make_auth_event(keys, url, "f" * 64), "challenge mismatch"),
        (
            make_auth_event(keys, "ws://elsewhere.example:9", challenge),
            None,
        ),  # accepted: list unset
        (make_auth_event(keys, "http://127.0.0.1:1", challenge), "relay url mismatch"),
        (
            make_auth_event(keys, url, challenge, created_at=stamp - 601),
            "created_at outside the allowed window",
        ),
        (
            make_auth_event(keys, url, challenge, created_at=stamp + 601),
            "created_at outside the allowed window",
        ),
        (sign_event(keys, 22242, "", [["relay", url]]), "missing or duplicate challenge tag"),
        (
            sign_event(keys, 22242, "", [*good_tags, ["challenge", challenge]]),
            "missing or duplicate challenge tag",
        ),
        (sign_event(keys, 22242, "", [["challenge", challenge]]), "missing or duplicate relay tag"),
        (
            sign_event(keys, 22242, "", [*good_tags, ["relay", url]]),
            "missing or duplicate relay tag",
        ),
        ({**make_auth_event(keys, url, challenge).to_dict(), "content": "x"}, "bad event id"),
        (
            {
                **make_auth_event(keys, url, challenge).to_dict(),
                "sig": make_auth_event(Keys.generate(), url, challenge).sig,
            },
            "bad signature",
        ),
    ]


async def test_auth_failures_are_ok_false(connect):
    probe = await connect(auth=False)
    for index in range(len(_auth_cases(probe.challenge, probe.url))):
        client = await connect(auth=False)
        event, reason = _auth_cases(client.challenge, client.url)[index]
        reply = await auth_reply(client, event)
        if reason is None:
            assert reply[2:] == [True, ""], reply
        else:
            assert reply[2:] == [False, f"auth-required: invalid auth event: {reason}"], (
                index,
                reply,
            )
            _events, end = await client.req("s", {"limit": 0})
            assert end[2] == "auth-required: authenticate first"


async def test_second_pubkey_refused_same_pubkey_again_ok(connect):
    client = await connect()
    again = make_auth_event(client.keys, client.url, client.challenge)
    assert (await auth_reply(client, again))[2:] == [True, ""]
    other = make_auth_event(Keys.generate(), client.url, client.challenge)
    reply = await auth_reply(client, other)
    assert reply[2:] == [False, "restricted: connection is already authenticated as another pubkey"]
    note = await client.ok(1, "still the first pubkey")
    assert note.pubkey == client.keys.pubkey


async def test_localhost_and_127_are_equivalent(connect):
    client = await connect(auth=False)
    port = client.url.rsplit(":", 1)[1]
    reply = await client.auth(relay_url=f"ws://localhost:{port}/")
    assert reply[2:] == [True, ""]


async def test_public_urls_are_enforced(start_relay, connect):
    relay = start_relay(
        env={"BUZZ_RELAY_PUBLIC_URLS": "ws://localhost:3600,ws://host.docker.internal:3600"}
    )
    for url, accepted in [
        ("ws://localhost:3600", True),
        ("ws://127.0.0.1:3600/", True),
        ("ws://host.docker.internal:3600", True),
        ("ws://other.example:3600", False),
        (relay.url, False),
    ]:
        client = await connect(relay.url, auth=False)
        reply = await client.auth(relay_url=url)
        if accepted:
            assert reply[2:] == [True, ""], url
        else:
            assert reply[2:] == [False, "auth-required: invalid auth event: relay url mismatch"], (
                url
            )


async def test_any_fresh_keypair_is_admitted(connect):
    for _ in range(3):
        client = await connect()
        await client.ok(1, "fresh identity")


@pytest.mark.parametrize("payload", ["not-an-object", 5, None])
async def test_malformed_auth_payload(connect, payload):
    client = await connect(auth=False)
    reply = await auth_reply(client, payload)
    assert reply[2] is False and reply[3].startswith("auth-required: invalid auth event:")


async def test_auth_events_are_never_stored_or_delivered(connect):
    watcher = await connect()
    await watcher.req("auth", {"kinds": [22242]})
    client = await connect()
    events, _ = await watcher.req("stored", {"kinds": [22242], "authors": [client.keys.pubkey]})
    assert events == []
    marker = await client.ok(1, "marker")
    await watcher.req("m", {"ids": [marker.id]})
    assert not [f for f in watcher.inbox if f[0] == "EVENT" and f[1] == "auth"]
