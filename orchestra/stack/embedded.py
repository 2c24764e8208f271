"""The embedded stack: PostgreSQL plus `buzz-relay serve` as child processes (§5.4).

The command that starts the stack owns it (`embedded/owner.lock`, `orchestra.locks`): both
processes are tied to it, so they die with it whatever kills it, and it stops them when it ends.
A stack whose owner died without stopping it is a leftover: the next start stops what is left
of it first. `orchestra stack up` starts a detached stack (nothing tied, no owner), which later
commands reuse and `orchestra stack down` stops.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from orchestra.documents.enums import StackMode
from orchestra.documents.run_config import DEFAULT_RELAY_PORT
from orchestra.locks import OwnerLock
from orchestra.paths import StatePaths
from orchestra.processes import alive, kill_group, stop_group, tied
from orchestra.relay.embedded_db import EmbeddedPostgres, EmbeddedPostgresError
from orchestra.stack.info import StackInfo, scripts_dir
from orchestra.stack.ports import busy_port_message, port_is_free
from orchestra.stack.readiness import StackError, probe_relay, wait_until_ready
from orchestra.stack.state import BenchmarkState

RELAY_HOST = "127.0.0.1"
STOP_GRACE_SECONDS = 10.0
LOG_TAIL_LINES = 50
#: how long a restarted stack may take to answer again before the job gives up (§5.1)
RESTART_READY_SECONDS = 60.0
#: a PostgreSQL killed with -9 leaves backends that hold its shared memory for a moment
POSTGRES_RETRY_SECONDS = 15.0
POSTGRES_RETRY_INTERVAL_SECONDS = 0.5


def relay_urls(port: int) -> tuple[str, str]:
    """(orchestrator URL, agents' URL); both `ws://localhost:<port>` in the local env."""
    url = f"ws://localhost:{port}"
    return url, url


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def running_relay_pid(paths: StatePaths) -> int | None:
    """The pid of this state dir's embedded relay when it is alive."""
    pid = _read_pid(paths.relay_pid)
    return pid if pid is not None and _is_our_relay(pid) else None


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _is_our_relay(pid: int) -> bool:
    """The pid is alive and runs buzz-relay (guards against a recycled pid)."""
    if not alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"buzz-relay" in cmdline


def embedded_postgres(state: BenchmarkState, *, detached: bool = False) -> EmbeddedPostgres:
    """The state dir's PostgreSQL, with the state file's password (§5.2)."""
    return EmbeddedPostgres(
        state.paths.embedded_pg, password=state.postgres_password, tied=not detached
    )


class EmbeddedStack:
    """Start (or reuse) the state dir's embedded stack; stop only what this object started.

    `detached`: `orchestra stack up`, which leaves the stack running for `orchestra stack down`.
    """

    def __init__(
        self, state: BenchmarkState, port: int = DEFAULT_RELAY_PORT, *, detached: bool = False
    ) -> None:
        self.state = state
        self.port = port
        self.paths = state.paths
        self.detached = detached
        self.postgres = embedded_postgres(state, detached=detached)
        self._relay: subprocess.Popen[bytes] | None = None
        self._owner = OwnerLock(self.paths.embedded_owner)
        self.reused = False
        self.reaped: list[str] = []  # what a dead owner had left running
        self._info: StackInfo | None = None

    @property
    def http_url(self) -> str:
        return f"http://{RELAY_HOST}:{self.port}"

    @property
    def info(self) -> StackInfo:
        """What the stack is, once started (the same after a restart)."""
        if self._info is None:
            ws_url, agent_url = relay_urls(self.port)
            self._info = StackInfo(
                StackMode.EMBEDDED, ws_url, agent_url, self.postgres.database_url
            )
        return self._info

    async def preflight(self) -> None:
        """Busy port: fine when it is this state dir's own ready relay, else exit 2."""
        if port_is_free(RELAY_HOST, self.port):
            return
        if await self._own_relay_ready():
            return
        raise StackError(busy_port_message(RELAY_HOST, self.port))

    async def _own_relay_ready(self) -> bool:
        return running_relay_pid(self.paths) is not None and await probe_relay(self.http_url)

    async def start(self) -> StackInfo:
        self.paths.embedded.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.paths.embedded, 0o700)
        if not self._owner.acquire():  # a live command runs this stack: use it
            self.reused = True
            await wait_until_ready(self.http_url, describe_failure=self._relay_log_tail)
            await self._postgres_start()
            return self.info
        if self._owner.previous is not None:
            self.reaped = await stop_embedded(self.state)
        await self.preflight()
        if await self._own_relay_ready():  # `stack up`'s: left running for `stack down`
            self._owner.release()
            self.reused = True
            await self._postgres_start()
            return self.info
        try:
            await self._bring_up()
        except BaseException:
            await self.stop()
            raise
        return self.info

    async def _bring_up(self, within_seconds: float | None = None) -> None:
        if not self.detached:
            self._owner.claim()
        database_url = await self._postgres_start(
            retry_seconds=0.0 if within_seconds is None else POSTGRES_RETRY_SECONDS
        )
        self._spawn_relay(database_url)
        await wait_until_ready(
            self.http_url,
            within_seconds=within_seconds,
            gave_up=self._relay_exit_reason,
            describe_failure=self._relay_log_tail,
        )
        if self.detached:
            self._owner.release()

    async def _postgres_start(self, retry_seconds: float = 0.0) -> str:
        deadline = time.monotonic() + retry_seconds
        while True:
            try:
                return await self.postgres.start()
            except (EmbeddedPostgresError, OSError) as error:
                if time.monotonic() >= deadline:
                    raise StackError(str(error)) from None
            await asyncio.sleep(POSTGRES_RETRY_INTERVAL_SECONDS)

    def _relay_log_tail(self) -> str:
        return tail(self.paths.relay_log)

    def _spawn_relay(self, database_url: str) -> None:
        ws_url, _ = relay_urls(self.port)
        env = {
            key: value
            for key, value in os.environ.items()
            if key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
        }
        env.update(
            BUZZ_BIND_ADDR=f"{RELAY_HOST}:{self.port}",
            BUZZ_DATABASE_URL=database_url,
            BUZZ_RELAY_PRIVATE_KEY=self.state.relay.secret_hex,
            BUZZ_RELAY_PUBLIC_URLS=ws_url,
        )
        argv = [str(scripts_dir() / "buzz-relay"), "serve"]
        descriptor = os.open(self.paths.relay_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "ab") as log:
            self._relay = subprocess.Popen(
                argv if self.detached else tied(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self.paths.relay_pid.write_text(f"{self._relay.pid}\n")

    def _relay_exit_reason(self) -> str | None:
        if self._relay is None or self._relay.poll() is None:
            return None
        return f"buzz-relay exited with code {self._relay.returncode} while starting"

    def processes(self) -> Mapping[int, str]:
        """The relay and PostgreSQL, ours or the reused stack's (`StackWatch`)."""
        watched: dict[int, str] = {}
        relay = self._relay.pid if self._relay is not None else running_relay_pid(self.paths)
        if relay is not None:
            watched[relay] = "buzz-relay"
        if self.postgres.pid is not None:
            watched[self.postgres.pid] = "PostgreSQL"
        return watched

    async def restart(self) -> None:
        """After the relay or PostgreSQL died: stop what is left of both, start both again
        (a reused stack becomes ours when its owner is gone)."""
        if not self._owner.held:
            self.reused = False
            await self.start()
            return
        relay, self._relay = self._relay, None
        if relay is not None:
            await kill_group(relay)
        await self.postgres.stop()
        await self._bring_up(within_seconds=RESTART_READY_SECONDS)

    async def stop(self) -> None:
        """Relay (TERM, 10 s, KILL), then PostgreSQL; a reused stack is left running."""
        if self.reused:
            return
        relay, self._relay = self._relay, None
        if relay is not None:
            await stop_group(relay, grace=STOP_GRACE_SECONDS)
            self.paths.relay_pid.unlink(missing_ok=True)
        if self.postgres.running:
            await self.postgres.stop()
        self._owner.release()


async def stop_embedded(state: BenchmarkState, *, remove_data: bool = False) -> list[str]:
    """`orchestra stack down`, and a dead owner's leftovers: stop the state dir's relay and
    PostgreSQL whoever started them; returns what it did."""
    done: list[str] = []
    paths = state.paths
    pid = running_relay_pid(paths)
    if pid is not None:
        await stop_group(pid, grace=STOP_GRACE_SECONDS)
        done.append(f"stopped buzz-relay (pid {pid})")
    paths.relay_pid.unlink(missing_ok=True)
    if await embedded_postgres(state).stop():  # found through its postmaster.pid
        done.append("stopped embedded PostgreSQL")
    if remove_data and paths.embedded_pg.exists():
        shutil.rmtree(paths.embedded_pg)
        done.append(f"removed {paths.embedded_pg}")
    return done
