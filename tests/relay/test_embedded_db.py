"""The embedded PostgreSQL under interruption: no server outlives a cancelled start."""

import asyncio
from pathlib import Path

import pytest

from orchestra.relay.embedded_db import EmbeddedPostgres

pytestmark = pytest.mark.slow


async def test_a_start_cancelled_halfway_leaves_no_server_running(pg_dir: Path) -> None:
    """Ctrl-C under `asyncio.run` cancels the awaiting task after the server was spawned but
    before it is ready; the start stops the server it spawned, so none stays up."""
    postgres = EmbeddedPostgres(pg_dir / "data")
    starting = asyncio.create_task(postgres.start())
    while not (pg_dir / "data" / "log").exists():  # the server is spawned, not ready yet
        assert not starting.done()
        await asyncio.sleep(0.01)
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    await asyncio.get_running_loop().shutdown_default_executor()  # every worker thread is done
    assert not postgres.running
    assert not (pg_dir / "data" / "postmaster.pid").exists()
