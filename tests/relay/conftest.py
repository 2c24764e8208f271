"""A small Nostr test client for relay tests (`connect` fixture) and in-process relays with
chosen limits (`relay_with` fixture)."""

import asyncio
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import orjson
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from orchestra.nostr.event import Event, sign_event
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event
from orchestra.relay.config import Limits, load_config
from orchestra.relay.server import Relay

RECV_TIMEOUT = 10.0
Frame = list[Any]


class Client:
    def __init__(self, url: str, websocket: ClientConnection, challenge: str) -> None:
        self.url = url
        self.ws = websocket
        self.challenge = challenge
        self.keys: Keys | None = None
        self.inbox: deque[Frame] = deque()

    async def send(self, frame: Any) -> None:
        await self.ws.send(
            frame if isinstance(frame, str | bytes) else orjson.dumps(frame).decode()
        )

    async def next(
        self, predicate: Callable[[Frame], bool] = lambda f: True, wait: float = RECV_TIMEOUT
    ) -> Frame:
        """The first frame (buffered or new) satisfying `predicate`; others stay buffered."""
        for frame in list(self.inbox):
            if predicate(frame):
                self.inbox.remove(frame)
                return frame
        async with asyncio.timeout(wait):
            while True:
                frame = orjson.loads(await self.ws.recv())
                if predicate(frame):
                    return frame
                self.inbox.append(frame)

    async def auth(self, keys: Keys | None = None, relay_url: str | None = None) -> Frame:
        self.keys = keys or Keys.generate()
        event = make_auth_event(self.keys, relay_url or self.url, self.challenge)
        await self.send(["AUTH", event.to_dict()])
        return await self.next(lambda f: f[0] == "OK" and f[1] == event.id)

    def sign(
        self, kind: int, content: str = "", tags: Sequence[Sequence[str]] = (), **kw: Any
    ) -> Event:
        assert self.keys is not None
        return sign_event(self.keys, kind, content, tags, **kw)

    async def publish(self, event: Event | dict) -> Frame:
        obj = event.to_dict() if isinstance(event, Event) else event
        await self.send(["EVENT", obj])
        return await self.next(lambda f: f[0] == "OK" and f[1] == obj["id"])

    async def ok(
        self, kind: int, content: str = "", tags: Sequence[Sequence[str]] = (), **kw: Any
    ) -> Event:
        """Publish and assert `OK true`."""
        event = self.sign(kind, content, tags, **kw)
        reply = await self.publish(event)
        assert reply[2] is True, reply
        return event

    async def req(self, subid: str, *filters: dict) -> tuple[list[dict], Frame]:
        """Stored events of a new subscription and the frame that ended them (EOSE or CLOSED)."""
        await self.send(["REQ", subid, *filters])
        events = []
        while True:
            frame = await self.next(
                lambda f: len(f) >= 2 and f[1] == subid and f[0] in ("EVENT", "EOSE", "CLOSED")
            )
            if frame[0] != "EVENT":
                return events, frame
            events.append(frame[2])

    async def next_event(self, subid: str) -> dict:
        frame = await self.next(lambda f: f[0] == "EVENT" and f[1] == subid)
        return frame[2]

    async def create_channel(self, visibility: str = "open", **tags: str) -> str:
        channel = str(uuid.uuid4())
        extra = [[k, v] for k, v in tags.items()]
        await self.ok(
            9007, "", [["h", channel], ["name", "test"], ["visibility", visibility], *extra]
        )
        return channel

    async def close(self) -> None:
        await self.ws.close()


@pytest.fixture
async def connect(relay_url: str) -> AsyncIterator[Callable[..., Any]]:
    """`await connect(url=None, auth=True, keys=None, challenge=True) -> Client`
    (authenticated by default)."""
    clients: list[Client] = []

    async def open_client(
        url: str | None = None, auth: bool = True, keys: Keys | None = None, challenge: bool = True
    ) -> Client:
        target = url or relay_url
        websocket = await ws_connect(target, max_size=None, max_queue=None, compression=None)
        code = ""
        if challenge:  # `challenge=False` for relays that do not send AUTH on connect
            first = orjson.loads(await asyncio.wait_for(websocket.recv(), RECV_TIMEOUT))
            assert first[0] == "AUTH" and len(first[1]) == 64
            code = first[1]
        client = Client(target, websocket, code)
        clients.append(client)
        if auth:
            reply = await client.auth(keys)
            assert reply[2] is True, reply
        return client

    yield open_client
    await asyncio.gather(*(client.close() for client in clients))


@pytest.fixture
async def relay_with(embedded_pg) -> AsyncIterator[Callable[..., Any]]:
    """`await relay_with(**limits) -> Relay`: an in-process relay on a fresh database with the
    given `Limits` fields overridden; stopped at test end."""
    relays: list[Relay] = []

    async def start(**limits: Any) -> Relay:
        url = await embedded_pg.create_database()
        config = load_config({}, bind="127.0.0.1:0", database_url=url)
        relay = Relay(config.model_copy(update={"limits": Limits(**limits)}), url)
        await relay.start()
        relays.append(relay)
        return relay

    yield start
    for relay in relays:
        await relay.stop()
