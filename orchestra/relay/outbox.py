"""A connection's outbound frames (protocol.md §5.5): one bounded queue, one sender task.

Producers never wait: replies and live deliveries are appended, and once more than
`max_pending_bytes` are waiting (frames queued plus live matches a subscription holds back
while its stored results are sent) the connection is closed with 1008 `slow consumer`, so a
reader that does not keep up only ever hurts itself. All outboxes together are bounded as
well: while their total is over its cap, a connection with more than an eighth of its own
limit waiting is closed the same way, which bounds memory however many slow readers there are.
Stored results are the exception: they are paged in with `wait_for_room`, which follows the
client's flow control instead of counting against the limit.

An event frame is kept as its prefix and the event's stored text until it is written, so a
delivery to many subscribers shares one copy of the event.
"""

import asyncio
import logging
import socket
from collections import deque

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from orchestra.relay.throttle import LimitLog, TimeSlice, Turns

log = logging.getLogger("buzz.relay.connection")

SLOW_CONSUMER = "slow consumer"
Frame = str | tuple[str, str]  # a frame, or an EVENT frame as (prefix, raw event)


def _size(frame: Frame) -> int:
    return len(frame) if isinstance(frame, str) else len(frame[0]) + len(frame[1]) + 1


class SendTotal:
    """Bytes waiting in every outbox of the relay."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.bytes = 0


class Outbox:
    def __init__(
        self,
        websocket: ServerConnection,
        max_pending_bytes: int,
        total: SendTotal,
        limit_log: LimitLog,
        turns: Turns,
    ) -> None:
        self._websocket = websocket
        self._turns = turns
        self.max_pending_bytes = max_pending_bytes
        self._total = total
        self._limit_log = limit_log
        self._frames: deque[Frame] = deque()
        self._queued_bytes = 0
        self._held_bytes = 0
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._room_below = 0
        self.closing = False
        self._close_task: asyncio.Task[None] | None = None

    @property
    def pending_bytes(self) -> int:
        return self._queued_bytes + self._held_bytes

    def put(self, frame: str) -> None:
        self._append(frame)

    def put_event(self, prefix: str, raw: str) -> None:
        """Queue `prefix + raw + "]"` without building it yet."""
        self._append((prefix, raw))

    def _append(self, frame: Frame) -> None:
        if self.closing:
            return
        self._frames.append(frame)
        size = _size(frame)
        self._queued_bytes += size
        self._total.bytes += size
        self._check_overflow()
        self._wake.set()

    def hold(self, size: int) -> bool:
        """Count `size` bytes kept back elsewhere for this connection; False once over the
        limit (the connection is then closing)."""
        if self.closing:
            return False
        self._held_bytes += size
        self._total.bytes += size
        self._check_overflow()
        return not self.closing

    def unhold(self, size: int) -> None:
        self._held_bytes -= size
        self._total.bytes -= size

    def _check_overflow(self) -> None:
        pending = self.pending_bytes
        if pending > self.max_pending_bytes:
            detail = f"more than {self.max_pending_bytes} bytes waiting to be sent"
        elif self._total.bytes > self._total.cap and pending > self.max_pending_bytes // 8:
            detail = f"{pending} bytes waiting while all connections have {self._total.bytes}"
        else:
            return
        self._limit_log.hit("max_pending_send_bytes", f"{detail}; closing 1008")
        self.close(CloseCode.POLICY_VIOLATION, SLOW_CONSUMER)

    def close(self, code: int, reason: str) -> None:
        """Drop everything queued and close the WebSocket (at most once)."""
        if self.closing:
            return
        self.closing = True
        self._discard()
        self._close_task = asyncio.create_task(self._websocket.close(code, reason))

    def _discard(self) -> None:
        self._frames.clear()
        self._total.bytes -= self._queued_bytes
        self._queued_bytes = 0
        self._drained.set()
        self._wake.set()

    def finish(self) -> None:
        """The connection ended: nothing more is sent."""
        self.closing = True
        self._discard()

    async def wait_for_room(self, below: int) -> bool:
        """Wait until fewer than `below` queued bytes are waiting; False if the connection is
        closing instead."""
        while not self.closing and self._queued_bytes >= below:
            self._room_below = below
            self._drained.clear()
            await self._drained.wait()
        return not self.closing

    async def run(self) -> None:
        """Write queued frames until the connection closes."""
        turn = TimeSlice(self._turns)
        try:
            while not self.closing:
                await turn.idle(self._wake.wait())
                self._wake.clear()
                # Several queued frames (e.g. the OKs of one group commit, a page of stored
                # results): let the kernel coalesce them into few segments.
                corked = len(self._frames) > 1 and self._set_cork(True)
                while self._frames and not self.closing:
                    frame = self._frames.popleft()
                    size = _size(frame)
                    self._queued_bytes -= size
                    self._total.bytes -= size
                    if self._queued_bytes < self._room_below:
                        self._drained.set()
                    text = frame if isinstance(frame, str) else frame[0] + frame[1] + "]"
                    await self._websocket.send(text)
                    await turn.pause_if_due()
                if corked:
                    self._set_cork(False)
        except ConnectionClosed:
            self.finish()

    def _set_cork(self, on: bool) -> bool:
        sock = self._websocket.transport.get_extra_info("socket")
        if sock is None or not hasattr(socket, "TCP_CORK"):
            return False
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1 if on else 0)
        except OSError:
            return False
        return True
