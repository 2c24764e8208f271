"""Connection caps (protocol.md §13): in total and per client IP, counted from the moment a TCP
connection is accepted, so sockets that never finish the handshake count too and the relay
never runs out of file descriptors. A connection over a cap gets an HTTP 503 and is closed
before any WebSocket work."""

import asyncio
import errno
import logging
import resource
import time
from collections.abc import Callable, Mapping
from typing import Any

from websockets.asyncio.server import ServerConnection

from orchestra.relay.throttle import LimitLog

log = logging.getLogger("buzz.relay")

# Descriptors kept for everything that is not a client connection (database pool, log files,
# the listening socket, connections in their first instants).
RESERVED_DESCRIPTORS = 256
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def effective_max_connections(configured: int) -> int:
    """The configured cap, lowered to what the open-file limit allows."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, soft - RESERVED_DESCRIPTORS))


def _refusal(reason: str) -> bytes:
    body = f"{reason}\n".encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Retry-After: 1\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


def break_parser_cycle(connection: ServerConnection) -> None:
    """websockets' sans-I/O parser is a generator holding its protocol, and an unclean close
    leaves an exception whose traceback holds the parser's frame: reference cycles that only a
    full garbage collection (rare here, memory.py) would free, keeping each closed
    connection's buffers. Once the connection is lost neither is used again."""
    protocol = connection.protocol
    error = getattr(protocol, "parser_exc", None)
    if error is not None:
        error.__traceback__ = None
    parser = getattr(protocol, "parser", None)
    if parser is not None:
        parser.close()


class Admission:
    def __init__(self, max_total: int, max_per_ip: int) -> None:
        self.max_total = max_total
        self.max_per_ip = max_per_ip
        self.total = 0
        self.per_ip: dict[str, int] = {}
        self._log = LimitLog("clients")

    def admit(self, ip: str) -> str | None:
        """Count a new connection from `ip`, or return why it is refused (nothing counted)."""
        if self.total >= self.max_total:
            self._log.hit("max_connections", f"{self.max_total} connections open; refusing more")
            return f"too many connections (max {self.max_total})"
        count = self.per_ip.get(ip, 0)
        if count >= self.max_per_ip:
            self._log.hit(
                "max_connections_per_ip", f"{ip} has {self.max_per_ip} connections; refusing more"
            )
            return f"too many connections from {ip} (max {self.max_per_ip})"
        self.total += 1
        self.per_ip[ip] = count + 1
        return None

    def release(self, ip: str) -> None:
        self.total -= 1
        count = self.per_ip[ip] - 1
        if count:
            self.per_ip[ip] = count
        else:
            del self.per_ip[ip]

    def connection_class(self) -> type[ServerConnection]:
        admission = self

        class AdmittedConnection(ServerConnection):
            admitted_ip: str | None = None

            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                peer = transport.get_extra_info("peername")
                ip = str(peer[0]) if peer else "unknown"
                refusal = admission.admit(ip)
                if refusal is not None:
                    # Refused before the WebSocket machinery starts: no handler task, and the
                    # descriptor is released as soon as the answer is written.
                    assert isinstance(transport, asyncio.WriteTransport)
                    transport.write(_refusal(refusal))
                    transport.close()
                    return
                self.admitted_ip = ip
                super().connection_made(transport)

            def connection_lost(self, exc: Exception | None) -> None:
                if self.admitted_ip is None:
                    return  # refused: connection_made never reached the WebSocket machinery
                admission.release(self.admitted_ip)
                self.admitted_ip = None
                super().connection_lost(exc)
                break_parser_cycle(self)

        return AdmittedConnection


class HandshakePacer:
    """Spreads WebSocket handshakes to at most `rate` per second beyond a burst of `burst`
    (the generic cell rate algorithm, waiting instead of refusing). A handshake and a new
    connection's setup cost ~0.5 ms of the event loop; a thousand arriving at once would
    otherwise stall every existing client for half a second."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval = 1.0 / rate
        self._tolerance = burst * self._interval
        self._clock = clock
        self._next = clock()  # the theoretical arrival time of the next handshake

    def delay(self) -> float:
        """Book the next slot; seconds to wait before it."""
        now = self._clock()
        start = max(self._next, now)
        self._next = start + self._interval
        return max(0.0, start - now - self._tolerance)

    async def wait_turn(self) -> None:
        delay = self.delay()
        if delay:
            await asyncio.sleep(delay)  # pacing, not synchronisation


class LoopErrorFilter:
    """Event-loop exception handler: running out of descriptors or memory while accepting is
    logged once a minute as one line, not as a traceback per attempt."""

    def __init__(self) -> None:
        self._log = LimitLog("the listener")

    def __call__(self, loop: asyncio.AbstractEventLoop, context: Mapping[str, Any]) -> None:
        error = context.get("exception")
        if isinstance(error, OSError) and error.errno in OUT_OF_RESOURCES:
            self._log.hit("open files", f"{context.get('message', 'accept failed')}: {error}")
            return
        loop.default_exception_handler(dict(context))
