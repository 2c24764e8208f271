"""The orchestrator's registry table `benchmark.trial_manifest` (orchestrator.md §5.6)."""

from __future__ import annotations

import asyncio
import time

import asyncpg

from orchestra.stack.readiness import StackError
from orchestra.stack.shipped import shipped_files

SCHEMA_RETRY_SECONDS = 2.0
SCHEMA_DEADLINE_SECONDS = 60.0


async def apply_schema(database_url: str) -> None:
    """Apply `testbed/benchmark_schema.sql`, retrying every 2 s for up to 60 s."""
    sql = shipped_files().benchmark_schema_sql.read_text(encoding="utf-8")
    deadline = time.monotonic() + SCHEMA_DEADLINE_SECONDS
    while True:
        try:
            connection = await asyncpg.connect(database_url, timeout=10)
            try:
                await connection.execute(sql)
            finally:
                await connection.close()
            return
        except (OSError, asyncpg.PostgresError) as error:
            if time.monotonic() >= deadline:
                raise StackError(f"could not apply the benchmark schema: {error}") from None
            await asyncio.sleep(SCHEMA_RETRY_SECONDS)


class Registry:
    """One pool per job; every method is a no-op without a database (external stack)."""

    def __init__(self, database_url: str | None) -> None:
        self._url = database_url
        self._pool: asyncpg.Pool | None = None

    async def open(self) -> None:
        if self._url is not None and self._pool is None:
            self._pool = await asyncpg.create_pool(self._url, min_size=0, max_size=4)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def reopen(self) -> None:
        """After the database was restarted: new connections, none of the dead ones."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()
        await self.open()

    async def record_trial(
        self, *, run_id: str, trial_id: str, manifest_hash: str, task_name: str, channel_id: str
    ) -> None:
        if self._pool is None:
            return
        await self._pool.execute(
            "INSERT INTO benchmark.trial_manifest"
            " (run_id, trial_id, manifest_hash, task_name, channel_id)"
            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id, trial_id) DO NOTHING",
            run_id,
            trial_id,
            manifest_hash,
            task_name,
            channel_id,
        )

    async def mark_archived(self, *, run_id: str, trial_id: str) -> None:
        if self._pool is None:
            return
        await self._pool.execute(
            "UPDATE benchmark.trial_manifest SET archived_at = now()"
            " WHERE run_id = $1 AND trial_id = $2",
            run_id,
            trial_id,
        )
