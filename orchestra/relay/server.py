"""The relay process: database, caches, writer, fan-out, TTL sweep, housekeeping and the
WebSocket server (protocol.md §1.2, §15.5)."""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import asyncpg
from websockets.asyncio.server import Server, ServerConnection, serve

from orchestra.errors import OrchestraError
from orchestra.nostr.keys import Keys
from orchestra.relay.admission import (
    Admission,
    HandshakePacer,
    LoopErrorFilter,
    effective_max_connections,
)
from orchestra.relay.channels import ChannelCache
from orchestra.relay.config import RelayConfig
from orchestra.relay.connection import Connection
from orchestra.relay.fanout import Fanout
from orchestra.relay.http import make_process_request
from orchestra.relay.memory import FullCollections, release_free_memory
from orchestra.relay.outbox import SendTotal
from orchestra.relay.quotas import Quotas
from orchestra.relay.storage.migrate import migrate
from orchestra.relay.storage.writes import Writer
from orchestra.relay.throttle import Turns

log = logging.getLogger("buzz.relay")

TRANSPORT_MAX_FRAME_BYTES = 1024 * 1024
# Stored-result queries share this many database connections (FIFO), so a REQ flood cannot
# take the database away from the writer, which has its own pool (also used by /_readiness):
# on the 2-core VM, 2 leave PostgreSQL a core for commits, and a flood of heavy REQs finished
# sooner than with 4 (docs/performance.md; docs/decisions.md D14).
QUERY_POOL_SIZE = 2
WRITE_POOL_SIZE = 2
CONNECT_RETRY_SECONDS = 60.0
HOUSEKEEPING_SECONDS = 5.0
# New WebSocket connections beyond a burst are spread out (admission.py, HandshakePacer).
HANDSHAKES_PER_SECOND = 500
HANDSHAKE_BURST = 100


class DatabaseUnavailable(OrchestraError):
    """PostgreSQL stayed unreachable for the whole start-up window (protocol.md §1.2: exit 2)."""

    exit_code = 2


async def connect_pool(
    database_url: str, retry_for: float = CONNECT_RETRY_SECONDS, size: int = QUERY_POOL_SIZE
) -> asyncpg.Pool:
    """Create a pool, retrying every second while PostgreSQL is not reachable."""
    deadline = time.monotonic() + retry_for
    while True:
        try:
            return await asyncpg.create_pool(database_url, min_size=1, max_size=size)
        except (TimeoutError, OSError, asyncpg.PostgresError) as error:
            if time.monotonic() >= deadline:
                raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {error}") from None
            log.warning("database not reachable yet (%s); retrying", error)
            await asyncio.sleep(1.0)


async def load_relay_keys(pool: asyncpg.Pool, configured: str | None) -> Keys:
    """The configured key, else the one stored on first start (§1.1)."""
    if configured:
        return Keys.parse(configured)
    async with pool.acquire() as connection:
        secret = await connection.fetchval(
            "SELECT value FROM relay_meta WHERE key = 'relay_private_key'"
        )
        if secret is None:
            generated = Keys.generate()
            await connection.execute(
                "INSERT INTO relay_meta (key, value) VALUES ('relay_private_key', $1) "
                "ON CONFLICT (key) DO NOTHING",
                generated.secret_hex,
            )
            secret = await connection.fetchval(
                "SELECT value FROM relay_meta WHERE key = 'relay_private_key'"
            )
    return Keys.parse(secret)


class Relay:
    """A running relay. `start()` returns once it listens; `stop()` shuts it down cleanly."""

    def __init__(
        self, config: RelayConfig, database_url: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.config = config
        self.database_url = database_url
        self.clock = clock
        self.cache = ChannelCache()
        self.fanout = Fanout(self.cache, self.now, config.limits.created_at_lower_limit)
        self.quotas = Quotas(config.limits)
        self.send_total = SendTotal(config.limits.max_pending_send_bytes_total)
        self.admission = Admission(
            effective_max_connections(config.limits.max_connections),
            config.limits.max_connections_per_ip,
        )
        self.handshakes = HandshakePacer(HANDSHAKES_PER_SECOND, HANDSHAKE_BURST)
        self.turns = Turns()  # the event loop's round robin of busy connections
        self.connections: set[Connection] = set()
        self.pool: asyncpg.Pool  # stored-result queries
        self.write_pool: asyncpg.Pool  # the writer and /_readiness
        self.relay_keys: Keys
        self.writer: Writer
        self._server: Server | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def now(self) -> int:
        return int(self.clock())

    @property
    def port(self) -> int:
        assert self._server is not None
        bound_port: int = self._server.sockets[0].getsockname()[1]
        return bound_port

    @property
    def url(self) -> str:
        return f"ws://{self.config.host}:{self.port}"

    async def start(self) -> None:
        asyncio.get_running_loop().set_exception_handler(LoopErrorFilter())
        self.write_pool = await connect_pool(self.database_url, size=WRITE_POOL_SIZE)
        self.pool = await connect_pool(self.database_url)
        async with self.pool.acquire() as connection:
            await migrate(connection)
        self.relay_keys = await load_relay_keys(self.pool, self.config.private_key)
        async with self.pool.acquire() as connection:
            await self.cache.load(connection, self.relay_keys.pubkey)
        self.writer = Writer(
            self.write_pool,
            self.cache,
            self.fanout,
            self.relay_keys,
            self.clock,
            self.config.limits.max_queued_write_bytes,
        )
        self._tasks = [
            asyncio.create_task(self.writer.run(), name="relay-writer"),
            asyncio.create_task(self.fanout.run(), name="relay-fanout"),
            asyncio.create_task(self._ttl_sweeper(), name="relay-ttl-sweep"),
            asyncio.create_task(self._housekeeping(), name="relay-housekeeping"),
        ]
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            process_request=make_process_request(self),
            compression=None,
            max_size=TRANSPORT_MAX_FRAME_BYTES,
            ping_interval=30,
            ping_timeout=60,
            close_timeout=2,
            create_connection=self.admission.connection_class(),
        )
        log.info("listening on ws://%s:%d", self.config.host, self.port)

    async def _handle(self, websocket: ServerConnection) -> None:
        connection = Connection(self, websocket)
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)

    async def _ttl_sweeper(self) -> None:
        while True:
            await asyncio.sleep(self.config.ttl_sweep_secs)
            await self.writer.sweep_ttl()

    async def _housekeeping(self) -> None:
        """Forget idle pubkey quotas; collect cyclic garbage when that is cheap (memory.py);
        return memory freed since the last round (after a flood) to the operating system while
        the relay is quiet."""
        collections = FullCollections()
        while True:
            await asyncio.sleep(HOUSEKEEPING_SECONDS)
            self.quotas.prune()
            if collections.due(
                len(self.fanout.index), self.admission.total, self.writer.budget.used
            ):
                collections.collect()
            if self.writer.budget.used == 0:
                release_free_memory()

    async def stop(self) -> None:
        """Stop accepting, close sockets with 1001, finish queued writes, close the pools."""
        if self._server is not None:
            self._server.close(close_connections=True)
            await self._server.wait_closed()
        writer, fanout, *timers = self._tasks
        for task in timers:  # no sweep is queued after the writer's last batch
            task.cancel()
        # The writer finishes what is queued while fan-out still drains its queue.
        self.writer.stop()
        await writer
        fanout.cancel()
        for task in (*timers, fanout):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.pool.close()
        await self.write_pool.close()
