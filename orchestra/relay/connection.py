"""One WebSocket connection: frame parsing, dispatch, authentication, subscriptions and the
per-connection limits (protocol.md §3, §5, §7, §13, §14).

Reading stops (backpressure) while the connection's unacknowledged writes or queued REQs are
at their limit; rates answer `rate-limited:`; outbound frames go through the bounded outbox.
"""

import asyncio
import contextlib
import functools
import logging
import secrets
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from orchestra.nostr import wire
from orchestra.nostr.event import kind_class
from orchestra.nostr.filters import Filter
from orchestra.nostr.nip42 import AuthError, check_auth_event
from orchestra.relay import channel_rules
from orchestra.relay.fanout import Subscription
from orchestra.relay.outbox import Outbox
from orchestra.relay.outcome import AUTH_FIRST, INTERNAL_ERROR, NOT_A_MEMBER, Rejected, WriteResult
from orchestra.relay.pipeline import validate_event
from orchestra.relay.quotas import PubkeyQuota
from orchestra.relay.storage.writes import write_charge
from orchestra.relay.stored import send_stored
from orchestra.relay.throttle import Budget, LimitLog, TimeSlice

if TYPE_CHECKING:
    from orchestra.relay.server import Relay

log = logging.getLogger("buzz.relay.connection")


T = TypeVar("T")


class _Closed(Exception):
    """The connection closed while its reading was paused."""


def filter_values(f: Filter) -> int:
    lists = (f.ids, f.authors, f.kinds, *f.tags.values())
    return max(1, sum(len(values) for values in lists if values is not None))


def describe_peer(websocket: ServerConnection) -> str:
    peer = websocket.remote_address
    if not peer:
        return "unknown peer"
    host = str(peer[0])
    return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"


class Connection:
    def __init__(self, relay: "Relay", websocket: ServerConnection) -> None:
        self.relay = relay
        self.limits = relay.config.limits
        self.websocket = websocket
        self.limit_log = LimitLog(f"connection {describe_peer(websocket)}")
        self.outbox = Outbox(
            websocket,
            self.limits.max_pending_send_bytes,
            relay.send_total,
            self.limit_log,
            relay.turns,
        )
        self.challenge = secrets.token_hex(32)
        self.pubkey: str | None = None
        self.quota: PubkeyQuota | None = None
        self.subscriptions: dict[str, Subscription] = {}
        self._filter_values = 0
        self._writes = Budget(self.limits.max_pending_write_bytes)
        self._stored_queue: asyncio.Queue[Subscription] = asyncio.Queue(
            self.limits.max_pending_reqs
        )
        self._closed: asyncio.Future[None] | None = None

    # ---- outbound -------------------------------------------------------------------------

    def send(self, frame: str) -> None:
        self.outbox.put(frame)

    def ok(self, event_id: str, accepted: bool, message: str) -> None:
        self.send(wire.relay_ok(event_id, accepted, message))

    def closed(self, subid: str, message: str) -> None:
        self.send(wire.relay_closed(subid, message))

    # ---- lifecycle ------------------------------------------------------------------------

    async def run(self) -> None:
        self._closed = asyncio.ensure_future(self.websocket.wait_closed())
        sender = asyncio.create_task(self.outbox.run())
        answerer = asyncio.create_task(self._answer_reqs())
        deadline = asyncio.get_running_loop().call_later(
            self.limits.auth_timeout_seconds, self._auth_deadline_passed
        )
        self.send(wire.relay_auth(self.challenge))
        turn = TimeSlice(self.relay.turns)
        try:
            while not self.outbox.closing:
                await self.handle_frame(await turn.idle(self.websocket.recv()))
                await turn.pause_if_due()
        except (ConnectionClosed, _Closed):
            pass
        finally:
            self.outbox.finish()  # replies still due (pending writes) are dropped
            self._closed.cancel()
            deadline.cancel()
            for sub in self.subscriptions.values():
                self.relay.fanout.unsubscribe(sub)
            self.subscriptions.clear()
            answerer.cancel()
            sender.cancel()
            if self.pubkey is not None:
                self.relay.quotas.detach(self.pubkey)

    async def _paused(self, wait: Awaitable[T]) -> T:
        """Await `wait` (reading is paused meanwhile) unless the connection closes first."""
        assert self._closed is not None
        waiting = asyncio.ensure_future(wait)
        await asyncio.wait((waiting, self._closed), return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            return waiting.result()
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        raise _Closed

    def _auth_deadline_passed(self) -> None:
        if self.pubkey is not None:
            return
        seconds = f"{self.limits.auth_timeout_seconds:g}"
        self.limit_log.hit("auth_timeout_seconds", f"no AUTH within {seconds} s; closing 1008")
        self.outbox.close(CloseCode.POLICY_VIOLATION, f"auth-required: no AUTH within {seconds} s")

    # ---- inbound --------------------------------------------------------------------------

    async def handle_frame(self, frame: str | bytes) -> None:
        try:
            message = wire.parse_client_message(
                frame,
                max_message_bytes=self.limits.max_message_bytes,
                max_subid_length=self.limits.max_subid_length,
            )
        except wire.FrameError as refusal:
            self.send(refusal.reply())
            return
        try:
            await self._dispatch(message, len(frame))
        except _Closed:
            raise
        except Exception:
            if self.limit_log.allows("internal error"):
                kind = type(message).__name__.removeprefix("Client").upper()
                log.exception("unexpected error while handling a %s frame", kind)
            self._internal_error(message)

    async def _dispatch(self, message: wire.ClientMessage, size: int) -> None:
        match message:
            case wire.ClientEvent():
                await self.on_event(message, size)
            case wire.ClientReq():
                await self.on_req(message)
            case wire.ClientClose(subid=subid):
                self._unsubscribe(subid)
            case wire.ClientAuth():
                self.on_auth(message)

    def _internal_error(self, message: wire.ClientMessage) -> None:
        """Answer an unexpected failure in the form the message expects (§14)."""
        match message:
            case (
                wire.ClientEvent(readable_id=str(event_id))
                | wire.ClientAuth(readable_id=str(event_id))
            ):
                self.ok(event_id, False, INTERNAL_ERROR)
            case wire.ClientReq(subid=subid):
                self._unsubscribe(subid)
                self.closed(subid, INTERNAL_ERROR)
            case _:
                self.send(wire.relay_notice(INTERNAL_ERROR))

    async def on_event(self, message: wire.ClientEvent, size: int) -> None:
        event_id = message.readable_id
        if self.pubkey is None or self.quota is None:
            self._refuse_event(event_id, AUTH_FIRST)
            return
        over_rate = self.quota.charge(size)
        if over_rate is not None:
            self.limit_log.hit("event rate", over_rate)
            self._refuse_event(event_id, over_rate)
            return
        try:
            event = validate_event(message.event, self.pubkey, self.limits, self.relay.now())
            if kind_class(event.kind) == "ephemeral" and channel_rules.is_channel_scoped(event):
                channel_rules.plan(event, self.relay.cache, self.relay.now())
        except Rejected as rejected:
            self._refuse_event(event_id, rejected.message)
            return
        if kind_class(event.kind) == "ephemeral":
            await self.relay.fanout.publish(event)
            self.ok(event.id, True, "")
            return
        charge = write_charge(event)
        if self._writes.would_wait(charge):
            self.limit_log.hit(
                "max_pending_write_bytes",
                f"{self._writes.used} bytes of events await the writer; pausing reads",
            )
            await self._paused(self._writes.acquire(charge))
        else:
            await self._writes.acquire(charge)
        submit = self.relay.writer.submit(self, event, charge)
        try:
            if self.relay.writer.budget.would_wait(charge):
                self.limit_log.hit(
                    "max_queued_write_bytes", "the writer's queue is full; pausing reads"
                )
                future = await self._paused(submit)
            else:
                future = await submit
        except BaseException:
            self._writes.release(charge)
            raise
        future.add_done_callback(lambda done: self._reply_written(event.id, charge, done))

    def _reply_written(self, event_id: str, charge: int, done: asyncio.Future[WriteResult]) -> None:
        self._writes.release(charge)
        result = done.result() if not done.cancelled() else WriteResult(False, INTERNAL_ERROR)
        self.ok(event_id, result.accepted, result.message)

    def _refuse_event(self, event_id: str | None, message: str) -> None:
        self.send(wire.relay_refusal(message, event_id=event_id))

    async def on_req(self, message: wire.ClientReq) -> None:
        limits = self.limits
        subid = message.subid
        if self.pubkey is None:
            self.closed(subid, AUTH_FIRST)
            return
        try:
            filters = message.parse_filters(
                max_filters=limits.max_filters_per_req,
                max_values=limits.max_filter_values,
                max_limit=limits.max_limit,
            )
        except wire.FrameError as refusal:
            self.send(refusal.reply())
            return
        replaced = self.subscriptions.get(subid)
        if replaced is None and len(self.subscriptions) >= limits.max_subscriptions:
            self.limit_log.hit("max_subscriptions", f"{limits.max_subscriptions} subscriptions")
            self.closed(
                subid, f"restricted: too many subscriptions (max {limits.max_subscriptions})"
            )
            return
        values = sum(filter_values(f) for f in filters)
        held = self._filter_values - (self._values_of(replaced) if replaced else 0)
        if held + values > limits.max_filter_values_per_connection:
            cap = limits.max_filter_values_per_connection
            self.limit_log.hit("max_filter_values_per_connection", f"{cap} filter values")
            self.closed(subid, f"restricted: too many filter values on this connection (max {cap})")
            return
        for f in filters:
            for channel_id in f.tags.get("h", ()):
                if not self.relay.cache.can_read(channel_id, self.pubkey):
                    self.closed(subid, NOT_A_MEMBER)
                    return
        self._unsubscribe(subid)
        sub = Subscription(subid, filters, self.pubkey, self.outbox)
        self.subscriptions[subid] = sub
        self._filter_values += values
        self.relay.fanout.subscribe(sub)
        if self._stored_queue.full():
            self.limit_log.hit(
                "max_pending_reqs", f"{limits.max_pending_reqs} REQs await results; pausing reads"
            )
            await self._paused(self._stored_queue.put(sub))
        else:
            self._stored_queue.put_nowait(sub)

    @staticmethod
    def _values_of(sub: Subscription) -> int:
        return sum(filter_values(f) for f in sub.filters)

    async def _answer_reqs(self) -> None:
        """Send stored results, one REQ at a time in arrival order, then EOSE and the live
        matches held back meanwhile (no gap, no duplicate: §5.3)."""
        turn = TimeSlice(self.relay.turns)
        while True:
            sub = await turn.idle(self._stored_queue.get())
            if not self._is_current(sub):
                continue
            try:
                sent = await send_stored(
                    self.relay.pool,
                    sub.filters,
                    self.pubkey,
                    self.outbox,
                    sub.frame_prefix,
                    functools.partial(self._is_current, sub),
                    turn,
                )
            except Exception as error:
                if self.limit_log.allows("query failed"):
                    log.warning("stored results for a subscription failed: %s", error)
                if self._is_current(sub):
                    self._unsubscribe(sub.subid)
                    self.closed(sub.subid, INTERNAL_ERROR)
                continue
            if sent is None:
                continue  # closed or replaced meanwhile
            self.send(wire.relay_eose(sub.subid))
            for event_id, raw in sub.take_pending():
                if event_id not in sent:
                    self.outbox.put_event(sub.frame_prefix, raw)

    def _is_current(self, sub: Subscription) -> bool:
        """Whether `sub` is still open (not closed, nor replaced by a REQ with its id)."""
        return self.subscriptions.get(sub.subid) is sub

    def _unsubscribe(self, subid: str) -> None:
        sub = self.subscriptions.pop(subid, None)
        if sub is not None:
            self._filter_values -= self._values_of(sub)
            self.relay.fanout.unsubscribe(sub)

    def on_auth(self, message: wire.ClientAuth) -> None:
        event_id = message.readable_id or ""
        try:
            event = check_auth_event(
                message.event,
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
        if self.pubkey is None:
            self.pubkey = event.pubkey
            self.quota = self.relay.quotas.attach(event.pubkey)
        self.ok(event.id, True, "")
