"""Shared fixtures: an embedded PostgreSQL (pgserver) and `buzz-relay serve` subprocesses.

* `embedded_pg` (session): `.new_database_url(name=None) -> str` (sync) and
  `await .create_database(name=None) -> str` (async) each create a fresh database and return its URL.
* `relay_url` (session): ws:// URL of one relay subprocess on its own database, shared by the
  whole session (tests must use fresh keys and channels); BUZZ_RELAY_PUBLIC_URLS is unset.
* `relay_database_url` (session): that relay's database URL (what a stack's database gives).
* `start_relay` (function): `start_relay(env=None, args=(), database_url=None) -> RelayProcess`
  starts an extra relay (fresh database unless given); `.url`, `.http_url`, `.stop()`,
  `.restart()`; all are stopped at test end.
* `free_port` (function): a TCP port on 127.0.0.1 that nothing listens on.
* `pg_dir` (function): a fresh directory (outside pytest's 0700 temp tree) for an
  `EmbeddedPostgres` data directory of a test's own.
* `document_round_trip` (session): `document_round_trip(job_dir) -> RoundTrip` loads the job's
  and every trial's `config.json` and `result.json` through their models and dumps them back;
  `.checked` counts the files, `.diffs` maps each file whose dump differs to a unified diff.
"""

import contextlib
import difflib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from orchestra.documents.io import Document
from orchestra.documents.job import JobConfig, JobResult
from orchestra.documents.trial import TrialConfig, TrialResult
from orchestra.relay.embedded_db import EmbeddedPostgres

READY_TIMEOUT_SECONDS = 30.0
_database_numbers = itertools.count(1)


class EmbeddedPg:
    def __init__(self, server: EmbeddedPostgres) -> None:
        self.server = server

    @staticmethod
    def _fresh_name(name: str | None) -> str:
        return name or f"test_{os.getpid()}_{next(_database_numbers)}"

    def new_database_url(self, name: str | None = None) -> str:
        return self.server.create_database_sync(self._fresh_name(name))

    async def create_database(self, name: str | None = None) -> str:
        return await self.server.create_database(self._fresh_name(name))


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def relay_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestra.relay", *args]


class RelayProcess:
    """A `buzz-relay serve` subprocess on 127.0.0.1, its log in `log_path`."""

    def __init__(
        self,
        database_url: str | None,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
    ) -> None:
        self.database_url = database_url
        self.log_path = log_path
        self.extra_env = dict(env or {})
        self.args = list(args)
        self.port = unused_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = READY_TIMEOUT_SECONDS) -> "RelayProcess":
        env = {k: v for k, v in os.environ.items() if not k.startswith("BUZZ_")}
        env.pop("DATABASE_URL", None)
        if self.database_url:
            env["BUZZ_DATABASE_URL"] = self.database_url
        env["BUZZ_BIND_ADDR"] = f"127.0.0.1:{self.port}"
        env.update(self.extra_env)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                relay_command("serve", *self.args), env=env, stdout=log, stderr=subprocess.STDOUT
            )
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"relay exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.http_url}/_readiness", timeout=0.5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)  # polling interval, not synchronisation
        raise RuntimeError(f"relay not ready within {timeout}s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> int | None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise RuntimeError(f"relay ignored SIGTERM:\n{self.log_tail()}") from None

    def restart(self) -> "RelayProcess":
        self.stop()
        return self.start()


@contextlib.contextmanager
def postgres_dir() -> Iterator[Path]:
    """A directory for PostgreSQL data outside pytest's temp tree: pytest resets
    /tmp/pytest-of-<user> to mode 0700 at every session start (also other sessions running
    concurrently as root), which would lock out the unprivileged user postgres runs as."""
    path = Path(tempfile.mkdtemp(prefix="buzz-test-pg-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack_scratch() -> Iterator[Path]:
    """A module's scratch directory for stacks and runs, outside pytest's temp tree (as
    `postgres_dir`: an embedded stack's PostgreSQL must reach it)."""
    with postgres_dir() as path:
        yield path


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return unused_port()


@pytest.fixture
def pg_dir() -> Iterator[Path]:
    """A fresh directory usable as an embedded PostgreSQL data directory's parent."""
    with postgres_dir() as path:
        yield path


@pytest.fixture(scope="session")
def embedded_pg() -> Iterator[EmbeddedPg]:
    with postgres_dir() as path:
        server = EmbeddedPostgres(path / "data")
        server.start_sync()
        try:
            yield EmbeddedPg(server)
        finally:
            server.stop_sync()


@pytest.fixture(scope="session")
def shared_relay(
    embedded_pg: EmbeddedPg, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RelayProcess]:
    log_path = tmp_path_factory.mktemp("relay") / "relay.log"
    relay = RelayProcess(embedded_pg.new_database_url(), log_path).start()
    try:
        yield relay
    finally:
        relay.stop()


@pytest.fixture(scope="session")
def relay_url(shared_relay: RelayProcess) -> str:
    return shared_relay.url


@pytest.fixture(scope="session")
def relay_database_url(shared_relay: RelayProcess) -> str:
    assert shared_relay.database_url is not None
    return shared_relay.database_url


@pytest.fixture
def start_relay(embedded_pg: EmbeddedPg, tmp_path: Path) -> Iterator:
    started: list[RelayProcess] = []

    def start(
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        database_url: str | None = None,
    ) -> RelayProcess:
        url = database_url or embedded_pg.new_database_url()
        relay = RelayProcess(url, tmp_path / f"relay-{len(started)}.log", env, args)
        started.append(relay)
        return relay.start()

    yield start
    for relay in started:
        relay.stop()


@dataclass(frozen=True)
class RoundTrip:
    checked: int
    diffs: dict[str, str]


def _round_trip(job_dir: Path) -> RoundTrip:
    documents: list[tuple[Path, type[Document]]] = [
        (job_dir / "config.json", JobConfig),
        (job_dir / "result.json", JobResult),
    ]
    for trial in sorted(p for p in job_dir.iterdir() if p.is_dir() and p.name[0] != "."):
        documents += [(trial / "config.json", TrialConfig), (trial / "result.json", TrialResult)]
    diffs: dict[str, str] = {}
    for path, model in documents:
        text = path.read_text(encoding="utf-8")
        dumped = model.load(path).to_json()
        if dumped != text:
            lines = difflib.unified_diff(text.splitlines(True), dumped.splitlines(True))
            diffs[str(path.relative_to(job_dir))] = "".join(lines)
    return RoundTrip(len(documents), diffs)


@pytest.fixture(scope="session")
def document_round_trip() -> Callable[[Path], RoundTrip]:
    return _round_trip
