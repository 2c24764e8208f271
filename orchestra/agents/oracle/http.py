"""A small HTTP/1.1 server on asyncio streams and the sans-I/O `h11` parser.

The oracle only needs request/response with keep-alive and to notice a client that
hangs up while an answer is delayed; a web framework would be a heavy dependency for that.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import h11

MAX_BODY_BYTES = 64 * 1024 * 1024
READ_CHUNK = 65536


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


Handler = Callable[[HttpRequest, asyncio.Event], Awaitable[HttpResponse | None]]
"""Gets the request and an event set when the client disconnects; None = send nothing."""


class HttpServer:
    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int = 0) -> int:
        self._server = await asyncio.start_server(self._on_connection, host, port)
        bound_port: int = self._server.sockets[0].getsockname()[1]
        return bound_port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, h11.ProtocolError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_BODY_BYTES)
        while True:
            request = await self._read_request(conn, reader)
            if request is None:
                return
            disconnected = asyncio.Event()
            watcher = asyncio.create_task(self._watch_disconnect(conn, reader, disconnected))
            try:
                response = await self._handler(request, disconnected)
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            if response is None or disconnected.is_set():
                return
            headers = [
                ("content-type", response.content_type),
                ("content-length", str(len(response.body))),
                *response.headers.items(),
            ]
            writer.write(conn.send(h11.Response(status_code=response.status, headers=headers)))
            writer.write(conn.send(h11.Data(data=response.body)))
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()

    async def _read_request(
        self, conn: h11.Connection, reader: asyncio.StreamReader
    ) -> HttpRequest | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(READ_CHUNK)
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY_BYTES:
                    return None
            elif isinstance(event, h11.EndOfMessage) and head is not None:
                headers = {k.decode().lower(): v.decode("latin-1") for k, v in head.headers}
                return HttpRequest(
                    head.method.decode(), head.target.decode("latin-1"), headers, bytes(body)
                )
            else:
                return None

    async def _watch_disconnect(
        self, conn: h11.Connection, reader: asyncio.StreamReader, disconnected: asyncio.Event
    ) -> None:
        """Keep reading while an answer is prepared; EOF means the client is gone."""
        while True:
            data = await reader.read(READ_CHUNK)
            if not data:
                disconnected.set()
                return
            conn.receive_data(data)
