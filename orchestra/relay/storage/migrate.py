"""Schema migrations, applied at every start-up (protocol.md §15.1)."""

import logging
from importlib import resources

from orchestra.relay.storage import DbConnection

log = logging.getLogger("buzz.relay.storage")

# Ordered migrations: index + 1 is the schema version each one produces.
MIGRATIONS = ("schema.sql",)
SCHEMA_VERSION = len(MIGRATIONS)
# Serialises concurrent migrators (e.g. `migrate` run while a relay starts).
_MIGRATION_LOCK_KEY = 0x42_75_7A_7A


async def migrate(connection: DbConnection) -> int:
    """Bring the schema to `SCHEMA_VERSION`; returns the version found before migrating."""
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK_KEY)
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS relay_meta (key text PRIMARY KEY, value text NOT NULL)"
        )
        found = await connection.fetchval(
            "SELECT value FROM relay_meta WHERE key = 'schema_version'"
        )
        current = int(found) if found is not None else 0
        if current > SCHEMA_VERSION:
            raise RuntimeError(
                f"database schema version {current} is newer than this relay's {SCHEMA_VERSION}"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            sql = resources.files(__package__).joinpath(MIGRATIONS[version - 1]).read_text()
            await connection.execute(sql)
            log.info("applied schema migration %d", version)
        await connection.execute(
            "INSERT INTO relay_meta (key, value) VALUES ('schema_version', $1) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            str(SCHEMA_VERSION),
        )
    return current
