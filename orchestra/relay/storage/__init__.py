"""PostgreSQL storage of the relay: schema, group-committed writes, filter queries (protocol.md §15)."""

from typing import TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

# What the storage helpers run statements on: a connection opened alone or one acquired from a
# pool (asyncpg's proxy, with the same methods but not a subclass).
DbConnection: TypeAlias = asyncpg.Connection | PoolConnectionProxy
