"""One WebSocket connection: frame parsing, dispatch, authentication, subscriptions and a
policed send queue (protocol.md §3, §5, §7, §14)."""

import asyncio
import json
import logging
import secrets
import socket
from collections import deque
from typing import TYPE_CHECKING, Any

import orjson
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from orchestra.nostr.event import kind_class
from orchestra.nostr.filters import FilterError, parse_filter
from orchestra.nostr.nip42 import AuthError, check_auth_event
from orchestra.relay import channel_rules
from orchestra.relay.fanout import Subscription, event_frame
from orchestra.relay.outcome import AUTH_FIRST, INTERNAL_ERROR, NOT_A_MEMBER, Rejected, WriteResult
from orchestra.relay.pipeline import validate_event
from orchestra.relay.storage.queries import query_events
from orchestra.relay.wire import dumps

if TYPE_CHECKING:
    from orchestra.relay.server import Relay

log = logging.getLogger("buzz.relay.connection")


_UNPARSEABLE = object()


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def parse_frame(message: str) -> Any:
    """orjson first; the stdlib parser only for what orjson refuses but JSON allows (lone
    surrogate escapes, integers beyond 64 bits), so those get the precise `invalid:` replies."""
    try:
        return orjson.loads(message)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(message, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return _UNPARSEABLE


def _readable_id(obj: object) -> str | None:
    if isinstance(obj, dict) and isinstance(obj.get("id"), str):
        return obj["id"]
    return None


class Connection:
    def __init__(self, relay: "Relay", websocket: ServerConnection) -> None:
        self.relay = relay
        self.websocket = websocket
        self.challenge = secrets.token_hex(32)
        self.pubkey: str | None = None
        self.subscriptions: dict[str, Subscription] = {}
        self._outbox: deque[str] = deque()
        self._pending_bytes = 0
        self._wake = asyncio.Event()
        self._closing = False
        self._close_task: asyncio.Task[None] | None = None

    # ---- outbound -------------------------------------------------------------------------

    def send(self, frame: str) -> None:
        if self._closing:
            return
        self._outbox.append(frame)
        self._pending_bytes += len(frame)
        if self._pending_bytes > self.relay.config.limits.max_pending_send_bytes:
            self._closing = True
            self._outbox.clear()
            log.warning("closing slow consumer %s", self.websocket.remote_address)
            self._close_task = asyncio.create_task(
                self.websocket.close(CloseCode.POLICY_VIOLATION, "slow consumer")
            )
        self._wake.set()

    def notice(self, message: str) -> None:
        self.send(dumps(["NOTICE", message]))

    def ok(self, event_id: str, accepted: bool, message: str) -> None:
        self.send(dumps(["OK", event_id, accepted, message]))

    def closed(self, subid: str, message: str) -> None:
        self.send(dumps(["CLOSED", subid, message]))

    async def _sender(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                # Several queued frames (e.g. the OKs of one group commit): let the kernel
                # coalesce them into few segments instead of one per frame.
                corked = len(self._outbox) > 1 and self._set_cork(True)
                while self._outbox:
                    frame = self._outbox.popleft()
                    self._pending_bytes -= len(frame)
                    await self.websocket.send(frame)
                if corked:
                    self._set_cork(False)
        except ConnectionClosed:
            self._closing = True

    def _set_cork(self, on: bool) -> bool:
        sock = self.websocket.transport.get_extra_info("socket")
        if sock is None or not hasattr(socket, "TCP_CORK"):
            return False
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1 if on else 0)
        except OSError:
            return False
        return True

    # ---- lifecycle ------------------------------------------------------------------------

    async def run(self) -> None:
        sender = asyncio.create_task(self._sender())
        self.send(dumps(["AUTH", self.challenge]))
        try:
            async for message in self.websocket:
                if self._closing:
                    break
                await self.handle_frame(message)
        except ConnectionClosed:
            pass
        finally:
            self._closing = True  # replies still due (pending writes) are dropped
            for sub in self.subscriptions.values():
                self.relay.index.remove(sub)
            self.subscriptions.clear()
            sender.cancel()

    # ---- inbound --------------------------------------------------------------------------

    async def handle_frame(self, message: str | bytes) -> None:
        limits = self.relay.config.limits
        if isinstance(message, bytes):
            self.notice("invalid: binary frames are not supported")
            return
        if len(message) * 4 > limits.max_message_bytes:
            size = len(message.encode("utf-8", "surrogatepass"))
            if size > limits.max_message_bytes:
                self.notice(
                    f"invalid: message too large ({size} bytes > {limits.max_message_bytes})"
                )
                return
        frame = parse_frame(message)
        if frame is _UNPARSEABLE:
            self.notice("invalid: could not parse message as JSON")
            return
        if not isinstance(frame, list) or not frame or not isinstance(frame[0], str):
            self.notice("invalid: message must be a JSON array starting with a string")
            return
        try:
            await self._dispatch(frame)
        except Exception:
            log.exception("unexpected error while handling a %s frame", frame[0][:16])
            self._internal_error(frame)

    async def _dispatch(self, frame: list[Any]) -> None:
        kind = frame[0]
        if kind == "EVENT":
            self.on_event(frame)
        elif kind == "REQ":
            await self.on_req(frame)
        elif kind == "CLOSE":
            self.on_close(frame)
        elif kind == "AUTH":
            self.on_auth(frame)
        else:
            self.notice(f"invalid: unknown message type: {kind}")

    def _internal_error(self, frame: list[Any]) -> None:
        """Answer an unexpected failure in the form the message expects (§14)."""
        target = frame[1] if len(frame) >= 2 else None
        if frame[0] in ("EVENT", "AUTH") and _readable_id(target) is not None:
            self.ok(_readable_id(target), False, INTERNAL_ERROR)  # type: ignore[arg-type]
        elif frame[0] == "REQ" and isinstance(target, str):
            self._unsubscribe(target)
            self.closed(target, INTERNAL_ERROR)
        else:
            self.notice(INTERNAL_ERROR)

    def on_event(self, frame: list[Any]) -> None:
        obj = frame[1] if len(frame) >= 2 else None
        event_id = _readable_id(obj)
        if len(frame) != 2 or not isinstance(obj, dict):
            self._refuse_event(event_id, "invalid: EVENT needs exactly one event object")
            return
        if self.pubkey is None:
            self._refuse_event(event_id, AUTH_FIRST)
            return
        try:
            event = validate_event(obj, self.pubkey, self.relay.config.limits, self.relay.now())
            if kind_class(event.kind) == "ephemeral":
                if channel_rules.is_channel_scoped(event):
                    channel_rules.plan(event, self.relay.cache, self.relay.now())
                self.relay.index.publish(event)
                self.ok(event.id, True, "")
                return
        except Rejected as rejected:
            self._refuse_event(event_id, rejected.message)
            return
        future = self.relay.writer.submit(event)
        future.add_done_callback(lambda done: self._reply_written(event.id, done))

    def _reply_written(self, event_id: str, done: asyncio.Future[WriteResult]) -> None:
        result = done.result() if not done.cancelled() else WriteResult(False, INTERNAL_ERROR)
        self.ok(event_id, result.accepted, result.message)

    def _refuse_event(self, event_id: str | None, message: str) -> None:
        if event_id is None:
            self.notice(message)
        else:
            self.ok(event_id, False, message)

    async def on_req(self, frame: list[Any]) -> None:
        limits = self.relay.config.limits
        subid = frame[1] if len(frame) >= 2 else None
        if not isinstance(subid, str):
            self.notice("invalid: REQ needs a subscription id string")
            return
        if not 1 <= len(subid) <= limits.max_subid_length:
            self.closed(
                subid, f"invalid: subscription id must be 1-{limits.max_subid_length} characters"
            )
            return
        if self.pubkey is None:
            self.closed(subid, AUTH_FIRST)
            return
        raw_filters = frame[2:]
        if not raw_filters:
            self.closed(subid, "invalid: REQ needs at least one filter")
            return
        if len(raw_filters) > limits.max_filters_per_req:
            self.closed(subid, f"invalid: too many filters (max {limits.max_filters_per_req})")
            return
        try:
            filters = [
                parse_filter(obj, max_values=limits.max_filter_values, max_limit=limits.max_limit)
                for obj in raw_filters
            ]
        except FilterError as error:
            self.closed(subid, str(error))
            return
        if subid not in self.subscriptions and len(self.subscriptions) >= limits.max_subscriptions:
            self.closed(
                subid, f"restricted: too many subscriptions (max {limits.max_subscriptions})"
            )
            return
        for f in filters:
            for channel_id in f.tags.get("h", ()):
                if not self.relay.cache.can_read(channel_id, self.pubkey):
                    self.closed(subid, NOT_A_MEMBER)
                    return
        self._unsubscribe(subid)
        sub = Subscription(subid, filters, self.pubkey, self.send)
        self.subscriptions[subid] = sub
        self.relay.index.add(sub)
        try:
            rows = await query_events(self.relay.pool, filters, self.pubkey)
        except Exception:
            log.exception("query for subscription failed")
            self._unsubscribe(subid)
            self.closed(subid, INTERNAL_ERROR)
            return
        if self.subscriptions.get(subid) is not sub:
            return  # closed or replaced while the query ran
        sent = set()
        for raw, event_id, _ in rows:
            sent.add(event_id)
            self.send(event_frame(subid, raw))
        self.send(dumps(["EOSE", subid]))
        pending, sub.pending = sub.pending or [], None
        for event_id, raw in pending:
            if event_id not in sent:
                self.send(event_frame(subid, raw))

    def _unsubscribe(self, subid: str) -> None:
        sub = self.subscriptions.pop(subid, None)
        if sub is not None:
            self.relay.index.remove(sub)

    def on_close(self, frame: list[Any]) -> None:
        if len(frame) >= 2 and isinstance(frame[1], str):
            self._unsubscribe(frame[1])
        else:
            self.notice("invalid: CLOSE needs a subscription id string")

    def on_auth(self, frame: list[Any]) -> None:
        obj = frame[1] if len(frame) >= 2 else None
        event_id = _readable_id(obj) or ""
        try:
            event = check_auth_event(
                obj,
                challenge=self.challenge,
                accepted_urls=list(self.relay.config.public_urls)
                if self.relay.config.public_urls
                else None,
                now=self.relay.now(),
            )
        except AuthError as error:
            self.ok(event_id, False, f"auth-required: invalid auth event: {error}")
            return
        if self.pubkey is not None and self.pubkey != event.pubkey:
            self.ok(
                event.id, False, "restricted: connection is already authenticated as another pubkey"
            )
            return
        self.pubkey = event.pubkey
        self.ok(event.id, True, "")
