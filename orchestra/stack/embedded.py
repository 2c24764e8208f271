"""The embedded stack: pgserver PostgreSQL plus `buzz-relay serve` as a child process (§5.4)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from orchestra.paths import StatePaths
from orchestra.processes import stop_group
from orchestra.relay.embedded_db import EmbeddedPostgres
from orchestra.stack.info import StackInfo, scripts_dir
from orchestra.stack.ports import busy_port_message, port_is_free
from orchestra.stack.readiness import StackError, probe_relay, wait_until_ready
from orchestra.stack.state import BenchmarkState

RELAY_HOST = "127.0.0.1"
DEFAULT_RELAY_PORT = 3600
STOP_GRACE_SECONDS = 10.0
LOG_TAIL_LINES = 50


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
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return b"buzz-relay" in cmdline


class EmbeddedStack:
    """Start (or reuse) the state dir's embedded stack; stop only what this object started."""

    def __init__(self, state: BenchmarkState, port: int = DEFAULT_RELAY_PORT) -> None:
        self.state = state
        self.port = port
        self.paths = state.paths
        self.postgres = EmbeddedPostgres(self.paths.embedded_pg)
        self._relay: subprocess.Popen[bytes] | None = None
        self.reused = False

    @property
    def http_url(self) -> str:
        return f"http://{RELAY_HOST}:{self.port}"

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
        await self.preflight()
        database_url = await self.postgres.start()
        if await self._own_relay_ready():
            self.reused = True
        else:
            self._spawn_relay(database_url)
            await wait_until_ready(
                self.http_url,
                gave_up=self._relay_exit_reason,
                describe_failure=lambda: tail(self.paths.relay_log),
            )
        ws_url, agent_url = relay_urls(self.port)
        return StackInfo("embedded", ws_url, agent_url, database_url)

    def _spawn_relay(self, database_url: str) -> None:
        self.paths.embedded.mkdir(parents=True, exist_ok=True)
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
        with self.paths.relay_log.open("ab") as log:
            self._relay = subprocess.Popen(
                [str(scripts_dir() / "buzz-relay"), "serve"],
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


async def stop_embedded(state: BenchmarkState, *, remove_data: bool = False) -> list[str]:
    """`orchestra stack down` for a stack another process left running; returns what it did."""
    done: list[str] = []
    paths = state.paths
    pid = running_relay_pid(paths)
    if pid is not None:
        await stop_group(pid, grace=STOP_GRACE_SECONDS)
        done.append(f"stopped buzz-relay (pid {pid})")
    paths.relay_pid.unlink(missing_ok=True)
    if (paths.embedded_pg / "postmaster.pid").exists():
        postgres = EmbeddedPostgres(paths.embedded_pg)
        await postgres.start()  # attaches to the running server so that it can be stopped
        await postgres.stop()
        done.append("stopped embedded PostgreSQL")
    if remove_data and paths.embedded_pg.exists():
        shutil.rmtree(paths.embedded_pg)
        done.append(f"removed {paths.embedded_pg}")
    return done
