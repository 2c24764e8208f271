"""One library client per acting identity, and the relay-operation policy (orchestrator.md §7.3)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from orchestra.buzz import BuzzClient, with_retries
from orchestra.nostr.keys import Keys

T = TypeVar("T")
OPERATION_TIMEOUT_SECONDS = 30.0


async def relay_operation(call: Callable[[], Awaitable[T]]) -> T:
    """Retry policy of §7.3 around one operation (the client enforces the 30 s timeout)."""
    return await with_retries(call)


class ClientPool:
    """Clients keyed by pubkey, reused by that identity's later operations.

    The job owns one pool for stable identities (pinned user, task users, directory
    identities); each trial owns one for its fresh agent identities.
    """

    def __init__(self, relay_url: str) -> None:
        self.relay_url = relay_url
        self._clients: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def client(self, keys: Keys) -> Any:
        client = self._clients.get(keys.pubkey)
        if client is None:
            client = BuzzClient.from_keys(self.relay_url, keys, timeout=OPERATION_TIMEOUT_SECONDS)
            self._clients[keys.pubkey] = client
        return client

    def lock(self, pubkey: str) -> asyncio.Lock:
        """Serialises profile publishing for one identity across concurrent trials (§7.5)."""
        return self._locks.setdefault(pubkey, asyncio.Lock())

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()
