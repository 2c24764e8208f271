"""A trial's relay operations through the client library (orchestrator.md §7.3; §7.2 steps
4-12 and 20): one client per acting identity, the retry policy, and the operations setup,
the agent phase and finalize perform.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from orchestra.buzz import BuzzClient, BuzzError, with_retries
from orchestra.nostr.keys import Keys
from orchestra.trial.identities import Identity

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
        self._clients: dict[str, BuzzClient] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def client(self, keys: Keys) -> BuzzClient:
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


PROFILE_BATCH = 200


@dataclass(frozen=True)
class Profile:
    """An identity whose profile must read `name` (and `about` when declared).

    `fresh`: minted for this trial, so it has no profile yet and nobody else publishes one.
    """

    identity: Identity
    about: str | None
    pool: ClientPool
    fresh: bool = False


async def create_trial_channel(user_client: BuzzClient, *, name: str, description: str) -> str:
    result = await relay_operation(
        lambda: user_client.channels_create(
            name=name, type="stream", visibility="private", description=description
        )
    )
    channel_id = result.get("channel_id")
    if not isinstance(channel_id, str) or not channel_id:
        raise BuzzError("relay_error", "channels create returned no channel_id")
    return channel_id


async def add_member(user_client: BuzzClient, channel_id: str, pubkey: str, role: str) -> None:
    await relay_operation(
        lambda: user_client.channels_add_member(channel=channel_id, pubkey=pubkey, role=role)
    )


def _differs(row: dict[str, Any] | None, name: str, about: str | None) -> bool:
    if not row or not row.get("found"):
        return True
    shown = row.get("display_name") or row.get("name")
    return shown != name or (about is not None and (row.get("about") or "") != about)


async def publish_profiles(reader: BuzzClient, profiles: Sequence[Profile]) -> int:
    """Publish only profiles that are missing or differ; returns how many were published.

    Stable identities are shared by concurrent trials, so each identity's read-compare-publish
    runs under its pool's per-identity lock.
    """
    rows: dict[str, dict[str, Any]] = {}
    pubkeys = list(dict.fromkeys(p.identity.pubkey for p in profiles if not p.fresh))
    for start in range(0, len(pubkeys), PROFILE_BATCH):
        batch = pubkeys[start : start + PROFILE_BATCH]
        for row in await relay_operation(functools.partial(reader.users_get, pubkey=batch)):
            rows[row["pubkey"]] = row
    published = 0
    for profile in profiles:
        identity = profile.identity
        if profile.fresh:
            await _set_profile(profile.pool.client(identity.keys), identity.name, profile.about)
            published += 1
            continue
        if not _differs(rows.get(identity.pubkey), identity.name, profile.about):
            continue
        async with profile.pool.lock(identity.pubkey):
            client = profile.pool.client(identity.keys)
            current = await relay_operation(client.users_get)
            if not _differs(current[0] if current else None, identity.name, profile.about):
                continue  # another trial published it meanwhile
            await _set_profile(client, identity.name, profile.about)
            published += 1
    return published


async def _set_profile(client: BuzzClient, name: str, about: str | None) -> None:
    await relay_operation(lambda: client.users_set_profile(name=name, about=about))


async def send_message(
    client: BuzzClient,
    channel_id: str,
    content: str,
    *,
    mention: list[str] | None,
    reply_to: str | None = None,
) -> str | None:
    """`messages send`; the event id, or None when the result carries none."""
    event_id, _ = await send_tagged_message(
        client, channel_id, content, mention=mention, reply_to=reply_to
    )
    return event_id


async def send_tagged_message(
    client: BuzzClient,
    channel_id: str,
    content: str,
    *,
    mention: list[str] | None,
    reply_to: str | None = None,
) -> tuple[str | None, list[str]]:
    """`messages send`; the event id (None when the result carries none) and the pubkeys the
    published event `p`-tags (explicit mentions and resolved `@Name`s alike)."""
    result = await relay_operation(
        lambda: client.messages_send(
            channel=channel_id, content=content, mention=mention, reply_to=reply_to
        )
    )
    event_id = result.get("event_id")
    tagged = result.get("mention_pubkeys")
    pubkeys = [pk for pk in tagged if isinstance(pk, str)] if isinstance(tagged, list) else []
    return (event_id if isinstance(event_id, str) and event_id else None), pubkeys


async def archive_channel(user_client: BuzzClient, channel_id: str) -> None:
    try:
        await relay_operation(lambda: user_client.channels_archive(channel=channel_id))
    except BuzzError as error:
        if "already archived" not in error.message:
            raise
