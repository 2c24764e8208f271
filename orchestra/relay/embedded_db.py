"""An embedded PostgreSQL server in a directory, from the `pgserver` package.

Used by `buzz-relay serve --embedded-db DIR`, by the test fixtures and by the orchestrator's
embedded stack. pgserver listens on a Unix-domain socket only; when run as root it creates a
`pgserver` system user and runs postgres as that user (postgres refuses to run as root).
"""

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import subprocess
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import asyncpg

if TYPE_CHECKING:  # at run time pgserver is imported in start_sync, its import warnings silenced
    from pgserver.postgres_server import PostgresServer

log = logging.getLogger("buzz.relay.embedded_db")

DEFAULT_DATABASE = "buzz"

T = TypeVar("T")


def _shielded_from_ctrl_c(function: Callable[[], T]) -> T:
    """Run `function` in this worker thread with SIGINT blocked.

    The programs it starts (initdb, pg_ctl, psql) inherit the mask, so a Ctrl-C on the
    terminal, which signals the whole foreground process group, no longer kills one of them
    halfway (a traceback, a half-started server); the orchestrator's own handler sees the
    interrupt in the main thread and stops the run once the server is up or down.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return function()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class EmbeddedPostgres:
    """Start, use and stop a pgserver PostgreSQL whose data directory is `data_dir`.

    `start()`/`stop()` are async (the blocking work runs in a thread); `start_sync()`/`stop_sync()`
    serve synchronous callers such as pytest fixtures.
    """

    def __init__(self, data_dir: str | Path, database: str = DEFAULT_DATABASE) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.database = database
        self._server: PostgresServer | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def database_url(self) -> str:
        return self.url_for(self.database)

    def url_for(self, database: str) -> str:
        if self._server is None:
            raise RuntimeError(f"embedded PostgreSQL in {self.data_dir} is not running")
        return self._server.get_uri(database)

    def start_sync(self) -> str:
        """Initialise the directory if needed, start postgres, ensure the database; return its URL."""
        if self._server is not None:
            return self.database_url
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pgserver.postgres_server import get_server

            self.data_dir.parent.mkdir(parents=True, exist_ok=True)
            self._server = get_server(self.data_dir, cleanup_mode=None)
        self.create_database_sync(self.database, exist_ok=True)
        return self.database_url

    def stop_sync(self) -> None:
        """Stop postgres (fast shutdown: open sessions are disconnected, data is kept)."""
        server = self._server
        if server is None:
            return
        # pg_ctl is one of the functions pgserver generates per binary at import: untyped.
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]
        from pgserver.postgres_server import PostgresServer

        # Release pgserver's per-process handle bookkeeping (with cleanup_mode=None this does
        # not stop the server) so its atexit hook has nothing left to do.
        server._cleanup()
        atexit.unregister(server._cleanup)
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.data_dir, user=server.system_user)
        except subprocess.CalledProcessError:
            log.warning("embedded PostgreSQL in %s was already stopped", self.data_dir)
        # pgserver caches one handle per directory; drop it so a later start really starts.
        PostgresServer._instances.pop(self.data_dir, None)
        self._server = None

    async def start(self) -> str:
        """Start in a worker thread. A thread cannot be stopped halfway: when the caller is
        cancelled meanwhile (Ctrl-C under `asyncio.run`), wait for it and stop what it started,
        so that no server outlives the command that was interrupted."""
        starting = asyncio.ensure_future(asyncio.to_thread(_shielded_from_ctrl_c, self.start_sync))
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await starting
            await self.stop()
            raise

    async def stop(self) -> None:
        await asyncio.to_thread(_shielded_from_ctrl_c, self.stop_sync)

    def _psql(self, sql: str) -> str:
        from pgserver._commands import POSTGRES_BIN_PATH

        result = subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "psql"),
                "-v",
                "ON_ERROR_STOP=1",
                "-qAt",
                self.url_for("postgres"),
            ],
            input=sql,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PGCONNECT_TIMEOUT": "10"},
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql failed: {result.stderr.strip()}")
        return result.stdout

    def create_database_sync(self, name: str, *, exist_ok: bool = False) -> str:
        """Create database `name` (synchronously, through psql) and return its URL."""
        literal = "'" + name.replace("'", "''") + "'"
        exists = self._psql(f"SELECT 1 FROM pg_database WHERE datname = {literal};").strip() == "1"
        if exists and not exist_ok:
            raise RuntimeError(f"database {name!r} already exists")
        if not exists:
            self._psql(f"CREATE DATABASE {_quote_ident(name)};")
        return self.url_for(name)

    async def create_database(self, name: str, *, exist_ok: bool = False) -> str:
        """Create database `name` and return its URL."""
        connection = await asyncpg.connect(self.url_for("postgres"))
        try:
            exists = await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
            if exists and not exist_ok:
                raise RuntimeError(f"database {name!r} already exists")
            if not exists:
                await connection.execute(f"CREATE DATABASE {_quote_ident(name)}")
        finally:
            await connection.close()
        return self.url_for(name)
