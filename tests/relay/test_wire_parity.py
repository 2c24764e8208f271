"""The relay answers every malformed frame exactly as `orchestra.nostr.wire` words it, so the
relay can parse with the shared module without changing one reply (protocol.md §3.3, §14).

Frames the shared parser accepts reach the relay's own rules; the only ones compared here are
those the relay must refuse before them (authentication) or, once authenticated, for their
filters.
"""

import json
import random
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from orchestra.nostr import wire
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event

AUTH_FIRST = "auth-required: authenticate first"
SYNC = '["SYNC"]'
SYNC_REPLY = wire.relay_notice("invalid: unknown message type: SYNC")

FIXED_FRAMES: list[str | bytes] = [
    b'["EVENT",{}]',
    "",
    "[",
    "null",
    '"EVENT"',
    "[[]]",
    '["EVENT",NaN]',
    "[" * 3000 + "]" * 3000,
    " " * (wire.MAX_MESSAGE_BYTES + 1),
    '["' + "é" * (wire.MAX_MESSAGE_BYTES // 2) + '"]',
    '["EVENT",{"id":"\\ud800","kind":1.5}]',
    '["REQ","s",{"limit":123456789012345678901234567890}]',
    '["REQ","\\ud800",{"kinds":"x"}]',
    '["CLOSE",{}]',
    '["COUNT","s",{}]',
]

_VALUES: list[Any] = [
    None,
    True,
    7,
    -1,
    1.5,
    "",
    "s",
    "x" * 65,
    "\ud800",
    [],
    [1],
    {},
    {"id": "abc"},
    {"id": 5},
    {"kinds": "9"},
    {"kinds": [9], "limit": -1},
    {"#hh": ["x"]},
    {"ids": ["A" * 64]},
    {"#e": ["zz"]},
    {"since": 1.0},
]
_TYPES = ["EVENT", "REQ", "CLOSE", "AUTH", "COUNT", "", "ÉVÉNEMENT", "\ud800"]


def random_frames(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    frames = []
    for _ in range(count):
        head = rng.choice(_TYPES)
        args = [rng.choice(_VALUES) for _ in range(rng.randint(0, 4))]
        if head == "REQ" and rng.random() < 0.3:
            args = ["sub", *([{}] * rng.randint(19, 22))]
        # ensure_ascii: lone surrogates travel as \u escapes, as a client would have to send them.
        frames.append(json.dumps([head, *args], ensure_ascii=True))
    return frames


def expected_reply(frame: str | bytes, *, authenticated: bool) -> str | None:
    """The reply the shared parser dictates, or None when the relay's own rules decide."""
    try:
        message = wire.parse_client_message(frame)
    except wire.FrameError as refusal:
        return refusal.reply()
    if isinstance(message, wire.ClientEvent) and not authenticated:
        return wire.relay_refusal(AUTH_FIRST, event_id=message.readable_id)
    if isinstance(message, wire.ClientReq):
        if not authenticated:
            return wire.relay_closed(message.subid, AUTH_FIRST)
        try:
            message.parse_filters()
        except wire.FrameError as refusal:
            return refusal.reply()
    return None


async def replies_to(ws: ClientConnection, frame: str | bytes) -> list[str]:
    await ws.send(frame)
    await ws.send(SYNC)
    received = []
    while (text := await ws.recv()) != SYNC_REPLY:
        received.append(str(text))
    return received


async def authenticate(ws: ClientConnection, relay_url: str) -> None:
    challenge = wire.parse_relay_message(str(await ws.recv()))
    assert isinstance(challenge, wire.RelayAuth)
    auth = make_auth_event(Keys.generate(), relay_url, challenge.challenge)
    await ws.send(wire.client_auth(auth))
    assert wire.parse_relay_message(str(await ws.recv())) == wire.RelayOk(auth.id, True, "")


@pytest.mark.parametrize("authenticated", [False, True])
async def test_relay_replies_match_the_shared_parser(relay_url: str, authenticated: bool) -> None:
    frames = [*FIXED_FRAMES, *random_frames(seed=int(authenticated), count=300)]
    compared = 0
    async with connect(relay_url, max_size=4 * 1024 * 1024, compression=None) as ws:
        if authenticated:
            await authenticate(ws, relay_url)
        else:
            await ws.recv()  # the AUTH challenge
        for frame in frames:
            expected = expected_reply(frame, authenticated=authenticated)
            if expected is None:
                continue
            assert await replies_to(ws, frame) == [expected], frame[:200]
            compared += 1
    assert compared > 200  # the corpus exercises refusals, not only accepted frames
