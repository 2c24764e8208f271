"""Start `buzz-relay serve --embedded-db` for a benchmark and wait until it is ready."""

import asyncio
import os
import socket
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

READY_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class RelayHandle:
    url: str
    pid: int
    log_path: Path


@asynccontextmanager
async def running_relay(
    data_dir: Path, timings: dict[str, float] | None = None
) -> AsyncIterator[str]:
    """Yield the ws:// URL of a relay on `data_dir/db`; `timings["ready_seconds"]` gets the time
    from process start to the first 200 from /_readiness."""
    async with relay_process(data_dir, timings) as handle:
        yield handle.url


@asynccontextmanager
async def relay_process(
    data_dir: Path, timings: dict[str, float] | None = None, env: Mapping[str, str] | None = None
) -> AsyncIterator[RelayHandle]:
    """`running_relay`, yielding the process id and log path as well; `env` adds variables."""
    port = free_port()
    relay_bin = Path(sys.executable).with_name("buzz-relay")
    log = (data_dir / "relay.log").open("ab")
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *[
            str(relay_bin),
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--embedded-db",
            str(data_dir / "db"),
        ],
        stdout=log,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "BUZZ_RELAY_LOG_LEVEL": "warning", **(env or {})},
    )
    try:
        async with httpx.AsyncClient() as http:
            deadline = asyncio.get_running_loop().time() + READY_TIMEOUT_S
            while True:
                if process.returncode is not None:
                    raise RuntimeError(
                        f"buzz-relay exited with {process.returncode}; see {log.name}"
                    )
                try:
                    if (
                        await http.get(f"http://127.0.0.1:{port}/_readiness", timeout=1)
                    ).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if asyncio.get_running_loop().time() > deadline:
                    raise RuntimeError("buzz-relay did not become ready within 60 s")
                # The polling interval of a readiness probe, not a synchronisation.
                await asyncio.sleep(0.05)
        if timings is not None:
            timings["ready_seconds"] = time.perf_counter() - started
        yield RelayHandle(f"ws://127.0.0.1:{port}", process.pid, Path(log.name))
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 30)
        log.close()
