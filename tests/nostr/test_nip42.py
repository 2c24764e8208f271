import json

import pytest

from orchestra.nostr.event import sign_event
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import AuthError, check_auth_event, make_auth_event, normalize_relay_url

KEYS = Keys.generate()
CHALLENGE = "c" * 64
NOW = 1_800_000_000
URLS = ["ws://localhost:3600", "ws://host.docker.internal:3600"]


def _check(event, accepted=URLS, challenge=CHALLENGE, now=NOW):
    return check_auth_event(
        json.loads(event.raw), challenge=challenge, accepted_urls=accepted, now=now
    )


def test_valid_auth_for_every_listed_url_and_loopback_equivalents():
    for url in [*URLS, "ws://127.0.0.1:3600", "ws://[::1]:3600/", "WS://LOCALHOST:3600"]:
        assert _check(make_auth_event(KEYS, url, CHALLENGE, created_at=NOW)).pubkey == KEYS.pubkey


def test_any_url_when_unrestricted():
    assert _check(make_auth_event(KEYS, "wss://anything.example/x", CHALLENGE, NOW), accepted=None)


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (
            sign_event(KEYS, 1, "", [["relay", URLS[0]], ["challenge", CHALLENGE]], NOW),
            "kind must be 22242",
        ),
        (make_auth_event(KEYS, URLS[0], "d" * 64, NOW), "challenge mismatch"),
        (make_auth_event(KEYS, "ws://evil.example:3600", CHALLENGE, NOW), "relay url mismatch"),
        (make_auth_event(KEYS, "http://localhost:3600", CHALLENGE, NOW), "relay url mismatch"),
        (
            make_auth_event(KEYS, URLS[0], CHALLENGE, NOW - 601),
            "created_at outside the allowed window",
        ),
        (
            make_auth_event(KEYS, URLS[0], CHALLENGE, NOW + 601),
            "created_at outside the allowed window",
        ),
        (
            sign_event(KEYS, 22242, "", [["relay", URLS[0]]], NOW),
            "missing or duplicate challenge tag",
        ),
        (
            sign_event(
                KEYS,
                22242,
                "",
                [["relay", URLS[0]], ["challenge", CHALLENGE], ["challenge", CHALLENGE]],
                NOW,
            ),
            "missing or duplicate challenge tag",
        ),
        (
            sign_event(KEYS, 22242, "", [["challenge", CHALLENGE]], NOW),
            "missing or duplicate relay tag",
        ),
    ],
)
def test_refusals(event, reason):
    with pytest.raises(AuthError) as caught:
        _check(event)
    assert str(caught.value) == reason


def test_bad_id_and_signature():
    event = json.loads(make_auth_event(KEYS, URLS[0], CHALLENGE, NOW).raw)
    forged = dict(event, sig="0" * 128)
    with pytest.raises(AuthError, match="^bad signature$"):
        check_auth_event(forged, challenge=CHALLENGE, accepted_urls=URLS, now=NOW)
    tampered = dict(event, content="x")
    with pytest.raises(AuthError, match="^bad event id$"):
        check_auth_event(tampered, challenge=CHALLENGE, accepted_urls=URLS, now=NOW)


def test_url_normalisation():
    assert normalize_relay_url("ws://127.0.0.1:3600") == normalize_relay_url("ws://localhost:3600/")
    assert normalize_relay_url("wss://Relay.Example") == "wss://relay.example:443/"
    assert normalize_relay_url("ws://h:80/path/?q=1#f") == "ws://h:80/path"
    with pytest.raises(ValueError):
        normalize_relay_url("https://relay.example")
