"""One NIP-42-authenticated WebSocket connection to a relay (buzz-cli.md §2, protocol.md §3, §7).

A background reader task routes every relay frame: `EVENT`/`EOSE`/`CLOSED` to the queue of their
subscription id, `OK` to the futures waiting for that event id. When the socket drops, every
queue receives `Lost` and every waiting future fails with a retryable `network_error`.
"""

import asyncio
import socket
from dataclasses import dataclass
from typing import Any, TypeAlias

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from orchestra.buzz.errors import EOSE, BuzzError, EndOfStoredEvents, network_error
from orchestra.nostr import wire
from orchestra.nostr.event import Event
from orchestra.nostr.keys import Keys
from orchestra.nostr.nip42 import make_auth_event

CONNECT_RETRY_DELAYS = (0.5, 1.0)
# The relay caps frames at 256 KiB; leave room so an oversized frame is reported, not fatal.
MAX_FRAME_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Lost:
    """The connection dropped; no more frames will arrive for any subscription."""

    reason: str


# `RelayClosed`: the relay ended or refused the subscription.
SubscriptionItem: TypeAlias = dict[str, Any] | wire.RelayClosed | Lost | EndOfStoredEvents


async def _open_socket(url: str, wait_limit: float) -> ClientConnection:
    delays = (*CONNECT_RETRY_DELAYS, None)
    for delay in delays:
        try:
            return await connect(
                url,
                compression=None,
                open_timeout=wait_limit,
                max_size=MAX_FRAME_BYTES,
                ping_interval=20,
                ping_timeout=60,
                proxy=None,  # the relay is addressed directly, never through an HTTP proxy
            )
        except InvalidURI as exc:
            raise BuzzError("user_error", f"invalid relay URL {url!r}: {exc}") from None
        except (ConnectionRefusedError, socket.gaierror, TimeoutError) as exc:
            reason = _describe(exc)
            if delay is None:
                raise network_error(f"cannot connect to relay {url}: {reason}") from None
            await asyncio.sleep(delay)
        except (OSError, InvalidHandshake) as exc:
            raise network_error(f"cannot connect to relay {url}: {_describe(exc)}") from None
    raise AssertionError("unreachable")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


class RelayConnection:
    """Use `await RelayConnection.open(url, keys, wait_limit)`; it returns once AUTH succeeded."""

    def __init__(self, ws: ClientConnection, url: str) -> None:
        self.url = url
        self.notices: list[str] = []
        self._ws = ws
        self._subscriptions: dict[str, asyncio.Queue[SubscriptionItem]] = {}
        self._pending_ok: dict[str, list[asyncio.Future[tuple[bool, str]]]] = {}
        self._challenge: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._lost_reason: str | None = None
        self._reader = asyncio.create_task(self._read_loop(), name=f"buzz-reader {url}")

    @classmethod
    async def open(cls, url: str, keys: Keys, wait_limit: float) -> "RelayConnection":
        ws = await _open_socket(url, wait_limit)
        conn = cls(ws, url)
        try:
            await conn._authenticate(keys, wait_limit)
        except BaseException:
            await conn.close()
            raise
        return conn

    @property
    def is_open(self) -> bool:
        return self._lost_reason is None

    async def _authenticate(self, keys: Keys, wait_limit: float) -> None:
        try:
            async with asyncio.timeout(wait_limit):
                challenge = await asyncio.shield(self._challenge)
        except TimeoutError:
            raise network_error("timed out waiting for the relay's AUTH challenge") from None
        event = make_auth_event(keys, self.url, challenge)
        accepted, message = await self._send_for_ok(event.id, wire.client_auth(event), wait_limit)
        if not accepted:
            raise BuzzError("auth_error", message or "auth-required: authentication failed")

    async def send_event(self, event: Event, wait_limit: float) -> tuple[bool, str]:
        """Send `EVENT` and wait for the relay's `OK`: `(accepted, message)`."""
        return await self._send_for_ok(event.id, wire.client_event(event), wait_limit)

    async def _send_for_ok(self, event_id: str, frame: str, wait_limit: float) -> tuple[bool, str]:
        future: asyncio.Future[tuple[bool, str]] = asyncio.get_running_loop().create_future()
        self._pending_ok.setdefault(event_id, []).append(future)
        try:
            await self._send(frame)
            async with asyncio.timeout(wait_limit):
                return await asyncio.shield(future)
        except TimeoutError:
            raise network_error("timed out waiting for the relay's OK") from None
        finally:
            waiting = self._pending_ok.get(event_id)
            if waiting and future in waiting:
                waiting.remove(future)
                if not waiting:
                    del self._pending_ok[event_id]

    def open_subscription(self, sub_id: str) -> "asyncio.Queue[SubscriptionItem]":
        queue: asyncio.Queue[SubscriptionItem] = asyncio.Queue()
        if self._lost_reason is not None:
            queue.put_nowait(Lost(self._lost_reason))
        self._subscriptions[sub_id] = queue
        return queue

    async def request(self, sub_id: str, filters: list[dict[str, Any]]) -> None:
        await self._send(wire.client_req(sub_id, filters))

    async def close_subscription(
        self, sub_id: str, queue: "asyncio.Queue[SubscriptionItem]"
    ) -> None:
        # Only forget the queue if a newer REQ with the same id has not replaced it.
        if self._subscriptions.get(sub_id) is queue:
            del self._subscriptions[sub_id]
            if self.is_open:
                try:
                    await self._send(wire.client_close(sub_id))
                except BuzzError:
                    pass  # the connection dropped: the relay forgot the subscription anyway

    async def close(self) -> None:
        await self._ws.close()
        await asyncio.gather(self._reader, return_exceptions=True)

    async def _send(self, frame: str) -> None:
        if self._lost_reason is not None:
            raise network_error(f"connection to relay lost: {self._lost_reason}")
        try:
            await self._ws.send(frame)
        except ConnectionClosed as exc:
            raise network_error(f"connection to relay lost: {_close_reason(exc)}") from None

    async def _read_loop(self) -> None:
        reason = "connection closed"
        try:
            async for frame in self._ws:
                if isinstance(frame, str):
                    self._dispatch(frame)
        except ConnectionClosed as exc:
            reason = _close_reason(exc)
        except Exception as exc:  # a transport failure must still wake every waiter below
            reason = _describe(exc)
        finally:
            self._mark_lost(reason)

    def _dispatch(self, frame: str) -> None:
        try:
            message = wire.parse_relay_message(frame)
        except wire.FrameError:
            return  # not a NIP-01 relay message: nothing can be routed from it
        match message:
            case wire.RelayEvent(subid, event):
                self._to_subscription(subid, event)
            case wire.RelayEose(subid):
                self._to_subscription(subid, EOSE)
            case wire.RelayClosed(subid, _):
                self._to_subscription(subid, message)
            case wire.RelayOk(event_id, accepted, text):
                for future in self._pending_ok.pop(event_id, []):
                    if not future.done():
                        future.set_result((accepted, text))
            case wire.RelayAuth(challenge):
                if not self._challenge.done():
                    self._challenge.set_result(challenge)
            case wire.RelayNotice(text):
                self.notices.append(text)

    def _to_subscription(self, sub_id: str, item: SubscriptionItem) -> None:
        queue = self._subscriptions.get(sub_id)
        if queue is not None:
            queue.put_nowait(item)

    def _mark_lost(self, reason: str) -> None:
        self._lost_reason = reason
        for queue in self._subscriptions.values():
            queue.put_nowait(Lost(reason))
        error = network_error(f"connection to relay lost: {reason}")
        for futures in self._pending_ok.values():
            for future in futures:
                if not future.done():
                    future.set_exception(error)
        self._pending_ok.clear()
        if not self._challenge.done():
            self._challenge.set_exception(error)
            self._challenge.exception()  # mark retrieved: nobody may be waiting for it


def _close_reason(exc: ConnectionClosed) -> str:
    if exc.rcvd is not None:
        text = f"code {exc.rcvd.code}"
        return f"{text} ({exc.rcvd.reason})" if exc.rcvd.reason else text
    return "connection closed without a close frame"
