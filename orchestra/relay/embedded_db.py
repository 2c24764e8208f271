"""An embedded PostgreSQL server in a directory, run from the binaries of the `pgserver` package.

Used by `buzz-relay serve --embedded-db DIR`, by the test fixtures and by the orchestrator's
embedded stack. The server listens on a Unix-domain socket only (no TCP port) and every
connection must authenticate with a password (SCRAM): the file system alone never grants access
to the data.

* **Password.** Given by the caller (the embedded stack's comes from the state directory), or
  generated once and kept in `<data dir>/buzz-password` (mode 0600). A password that is not the
  cluster's (a new state file, or a data directory of pgserver's trust-everyone default) is set
  in single-user mode before the server starts; `<data dir>/buzz-password.sha256` tells which
  password the cluster has, so nothing is reset when it is unchanged.
* **Root.** Postgres refuses to run as root. As root it runs in a user namespace in which it is
  the ordinary user `nobody` while it stays root, the owner of its files, outside; so no other
  system user needs a path to the data directory, and no directory above it is opened up.
* **Lifetime.** The server is this process's child in its own process group; `tied` (the
  default) makes the kernel kill it when this process dies (`orchestra.processes.tied`). A
  server already running on the directory is attached to, not started.
* **Ctrl-C.** The terminal signals its whole foreground process group. The short programs
  (initdb, single-user postgres) run in a worker thread with SIGINT blocked, which they inherit,
  so none is killed halfway; the server runs in its own session. A start whose caller is
  cancelled meanwhile (Ctrl-C under `asyncio.run`) stops the server it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import logging
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import asyncpg

from orchestra.processes import alive, tied, wait_gone

log = logging.getLogger("buzz.relay.embedded_db")
T = TypeVar("T")

DEFAULT_DATABASE = "buzz"
SUPERUSER = "postgres"
SOCKET_NAME = ".s.PGSQL.5432"
#: sun_path holds 108 bytes including the terminating NUL
MAX_SOCKET_PATH = 107
READY_SECONDS = 60.0
STOP_SECONDS = 60.0
POLL_SECONDS = 0.05
COMMAND_SECONDS = 120.0
PASSWORD_FILE = "buzz-password"
FINGERPRINT_FILE = "buzz-password.sha256"
#: who postgres is inside its user namespace when this process is root (an existing user:
#: initdb and postgres look their own user up)
NAMESPACE_USER = "nobody"
HBA = """\
# Written by buzz-orchestra: a password (SCRAM) on every socket and port.
local   all             all                                     scram-sha-256
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
local   replication     all                                     scram-sha-256
host    replication     all             127.0.0.1/32            scram-sha-256
host    replication     all             ::1/128                 scram-sha-256
"""


class EmbeddedPostgresError(RuntimeError):
    """The server could not be prepared, started or reached; the message says why."""


def _bin(name: str) -> str:
    """A program of pgserver's PostgreSQL build (found, not imported: the package's import
    sets up machinery this module does not use)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError("the pgserver package is not installed")
    return str(Path(spec.submodule_search_locations[0]) / "pginstall" / "bin" / name)


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _fingerprint(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


def _shielded_from_ctrl_c(function: Callable[[], T]) -> T:
    """Run `function` in this worker thread with SIGINT blocked.

    The programs it starts (initdb, single-user postgres) inherit the mask, so a Ctrl-C on the
    terminal, which signals the whole foreground process group, no longer kills one of them
    halfway (a traceback, a half-prepared cluster); the orchestrator's own handler sees the
    interrupt in the main thread and stops the run once the server is up or down.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return function()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class EmbeddedPostgres:
    """Start, use and stop the PostgreSQL server whose data directory is `data_dir`.

    `start()`/`stop()` are async (blocking preparation runs in a thread, the server itself is
    spawned on the event loop's thread so that `tied` follows this process); `start_sync()`/
    `stop_sync()` serve synchronous callers such as pytest fixtures.
    """

    def __init__(
        self,
        data_dir: str | Path,
        database: str = DEFAULT_DATABASE,
        *,
        password: str | None = None,
        tied: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.database = database
        self.tied = tied
        self._password = password
        self.process: subprocess.Popen[bytes] | None = None  # the server, when we started it
        self.pid: int | None = None  # the postmaster's pid while running (ours or attached)
        self._socket_dir: Path | None = None
        self._generated = False  # the password is new: keep it once the cluster has it
        self._started = 0.0

    # --- addresses -----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.pid is not None

    @property
    def database_url(self) -> str:
        return self.url_for(self.database)

    @property
    def password(self) -> str:
        """The caller's, else the one kept in the data directory, else a new one (kept once
        the cluster has it)."""
        if self._password is None:
            try:
                self._password = (self.data_dir / PASSWORD_FILE).read_text().strip()
            except FileNotFoundError:
                self._password, self._generated = secrets.token_urlsafe(24), True
        return self._password

    @property
    def socket_dir(self) -> Path:
        """The data directory, or a short private directory when its path is too long for a
        socket address."""
        if self._socket_dir is None:
            if len(str(self.data_dir / SOCKET_NAME)) <= MAX_SOCKET_PATH:
                self._socket_dir = self.data_dir
            else:
                digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:16]
                self._socket_dir = Path("/tmp") / f"buzz-pg-{digest}"
        return self._socket_dir

    def url_for(self, database: str) -> str:
        if self.pid is None:
            raise RuntimeError(f"embedded PostgreSQL in {self.data_dir} is not running")
        secret = quote(self.password, safe="")
        return f"postgresql://{SUPERUSER}:{secret}@/{quote(database)}?host={self.socket_dir}"

    # --- start and stop --------------------------------------------------------------------

    def start_sync(self) -> str:
        """Initialise the directory if needed, start postgres, ensure the database; its URL.
        A server that died since it was started is started again."""
        self._forget_dead()
        if self.pid is None and not self._prepare():
            self._spawn()
            while not self._ready():
                time.sleep(POLL_SECONDS)
        self.create_database_sync(self.database, exist_ok=True)
        return self.database_url

    async def start(self) -> str:
        """`start_sync`'s work without blocking the loop: the directory is prepared in a worker
        thread shielded from Ctrl-C, the server spawned on the loop's thread. A thread cannot be
        stopped halfway: when the caller is cancelled meanwhile, wait for it; a server this call
        started is stopped when the start does not complete, so none outlives the command that
        was interrupted."""
        self._forget_dead()
        spawned = False
        if self.pid is None:
            preparing = asyncio.ensure_future(
                asyncio.to_thread(_shielded_from_ctrl_c, self._prepare)
            )
            try:
                attached = await asyncio.shield(preparing)
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await preparing
                raise
            if not attached:
                self._spawn()
                spawned = True
        try:
            # postgres tells readiness in a file only
            while spawned and not self._ready():  # noqa: ASYNC110
                await asyncio.sleep(POLL_SECONDS)
            await self.create_database(self.database, exist_ok=True)
        except BaseException:
            if spawned and self.process is not None:
                await self.stop()
            raise
        return self.database_url

    def stop_sync(self) -> bool:
        """Stop postgres (fast shutdown: open sessions are disconnected, data is kept), also
        one another process started; False when none was running."""
        pid = self._signal_stop()
        if pid is None:
            return False
        deadline = time.monotonic() + STOP_SECONDS
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        self._finish_stop(pid)
        return True

    async def stop(self) -> bool:
        pid = self._signal_stop()
        if pid is None:
            return False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_SECONDS):
                await wait_gone([pid])
        self._finish_stop(pid)
        return True

    def _forget_dead(self) -> None:
        if self.process is not None:
            if self.process.poll() is not None:  # reaps it
                self.pid, self.process = None, None
        elif self.pid is not None and not alive(self.pid):
            self.pid = None

    def _signal_stop(self) -> int | None:
        """Ask the server to stop; its pid, or None when none runs. Our own child is known by
        its handle (its pid cannot be reused before we reap it); any other by postmaster.pid."""
        self.pid = None
        process = self.process
        if process is not None:
            if process.poll() is not None:
                self.process = None
                return None
            pid: int | None = process.pid
        else:
            pid = self._running_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)  # postgres' fast shutdown
        return pid

    def _finish_stop(self, pid: int) -> None:
        if alive(pid):
            log.warning("embedded PostgreSQL in %s ignored the shutdown; killing it", self.data_dir)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process, self.process = self.process, None
        if process is not None:
            process.wait()

    # --- preparing the directory -----------------------------------------------------------

    def _prepare(self) -> bool:
        """Make the directory a cluster that wants our password; True when a server already
        runs on it (then it is attached to, and its password must already be ours)."""
        running = self._running_pid()
        if running is not None:
            self.pid = running
            self._socket_dir = self._postmaster_field(4, Path) or self.socket_dir
            return True
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb()
        else:
            self._own_files()
            if not self._password_is_current():
                self._set_password()
        if self.socket_dir != self.data_dir:
            self.socket_dir.mkdir(mode=0o700, exist_ok=True)
        return False

    def _initdb(self) -> None:
        if self.data_dir.exists() and any(self.data_dir.iterdir()):
            raise EmbeddedPostgresError(f"{self.data_dir}: not empty and not a PostgreSQL cluster")
        self.data_dir.mkdir(mode=0o700, exist_ok=True)
        self._run(
            [
                _bin("initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                SUPERUSER,
                "--encoding=utf8",
                "--auth-local=scram-sha-256",
                "--auth-host=scram-sha-256",
                "--pwfile=/dev/stdin",
            ],
            stdin=self.password,
            what="initdb",
        )
        self._write_auth()

    def _own_files(self) -> None:
        """A data directory an earlier version ran as pgserver's `pgserver` user becomes ours."""
        uid, gid = os.getuid(), os.getgid()
        if self.data_dir.stat().st_uid == uid:
            return
        for root, directories, files in os.walk(self.data_dir):
            for name in (*directories, *files):
                os.lchown(os.path.join(root, name), uid, gid)
        os.lchown(self.data_dir, uid, gid)

    def _password_is_current(self) -> bool:
        try:
            recorded = (self.data_dir / FINGERPRINT_FILE).read_text().strip()
        except OSError:
            return False
        return recorded == _fingerprint(self.password)

    def _set_password(self) -> None:
        """Single-user mode needs no authentication; the statement never reaches a log."""
        literal = self.password.replace("'", "''")
        self._run(
            [
                *(_bin("postgres"), "--single", "-D", str(self.data_dir), "-F"),
                *("-c", "exit_on_error=true", SUPERUSER),
            ],
            stdin=f"ALTER ROLE {SUPERUSER} PASSWORD '{literal}';\n",
            what="setting the superuser password",
        )
        self._write_auth()

    def _write_auth(self) -> None:
        (self.data_dir / "pg_hba.conf").write_text(HBA)
        _write_private(self.data_dir / FINGERPRINT_FILE, _fingerprint(self.password) + "\n")
        if self._generated:
            _write_private(self.data_dir / PASSWORD_FILE, self.password + "\n")
            self._generated = False

    def _run(self, argv: list[str], *, stdin: str, what: str) -> None:
        """A short postgres program as the server's user; its output never holds the input."""
        try:
            result = subprocess.run(
                _as_server_user(argv),
                input=stdin,
                capture_output=True,
                text=True,
                timeout=COMMAND_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise EmbeddedPostgresError(f"{what} in {self.data_dir} failed: {error}") from None
        if result.returncode != 0:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
            raise EmbeddedPostgresError(f"{what} in {self.data_dir} failed: {tail}")

    # --- the server process ------------------------------------------------------------------

    def _spawn(self) -> None:
        argv = _as_server_user(
            [
                _bin("postgres"),
                "-D",
                str(self.data_dir),
                "-k",
                str(self.socket_dir),
                "-c",
                "listen_addresses=",
            ],
            tie=self.tied,
        )
        with (self.data_dir / "log").open("ab") as output:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid = self.process.pid
        self._started = time.monotonic()

    def _ready(self) -> bool:
        """postmaster.pid names our server as ready; raises when it exited or took too long."""
        assert self.process is not None
        if self.process.poll() is not None:
            self.pid, self.process = None, None
            raise EmbeddedPostgresError(
                f"embedded PostgreSQL in {self.data_dir} exited while starting:\n{self._log_tail()}"
            )
        if self._postmaster_field(0, int) == self.pid and self._postmaster_field(7, str) == "ready":
            return True
        if time.monotonic() - self._started > READY_SECONDS:
            raise EmbeddedPostgresError(
                f"embedded PostgreSQL in {self.data_dir} not ready after {READY_SECONDS:g} s:\n"
                f"{self._log_tail()}"
            )
        return False

    def _postmaster_field(self, index: int, kind: Callable[[str], T]) -> T | None:
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
            value = lines[index].strip()
        except (OSError, IndexError):
            return None
        try:
            return kind(value) if value else None
        except ValueError:
            return None

    def _running_pid(self) -> int | None:
        """The pid in postmaster.pid when that process runs postgres on this directory."""
        pid = self._postmaster_field(0, int)
        if pid is None or not alive(pid):
            return None
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return pid  # not readable here: trust the lock file as postgres itself does
        return pid if os.fsencode(str(self.data_dir)) in command else None

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = (self.data_dir / "log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # --- databases -----------------------------------------------------------------------------

    def _psql(self, sql: str) -> str:
        result = subprocess.run(
            [
                *(_bin("psql"), "-v", "ON_ERROR_STOP=1", "-qAt"),
                *("-h", str(self.socket_dir), "-U", SUPERUSER, "-d", "postgres"),
            ],
            input=sql,
            capture_output=True,
            text=True,
            check=False,
            # the password in the environment, not on a command line every user can read
            env={**os.environ, "PGCONNECT_TIMEOUT": "10", "PGPASSWORD": self.password},
        )
        if result.returncode != 0:
            raise EmbeddedPostgresError(f"psql failed: {result.stderr.strip()}")
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


def _write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


def _as_server_user(argv: list[str], *, tie: bool = False) -> list[str]:
    """As root, `argv` in a user namespace where it is `nobody` inside and root outside."""
    command = tied(argv) if tie else argv
    if os.geteuid() != 0:
        return command
    unshare = shutil.which("unshare")
    if unshare is None:
        raise EmbeddedPostgresError(
            "embedded PostgreSQL cannot run as root without util-linux `unshare`"
        )
    user = pwd.getpwnam(NAMESPACE_USER)
    return [
        unshare,
        "--user",
        f"--map-user={user.pw_uid}",
        f"--map-group={user.pw_gid}",
        "--",
        *command,
    ]
