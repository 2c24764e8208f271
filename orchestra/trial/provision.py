"""Relay provisioning of a trial through the client library (orchestrator.md §7.2 steps 4-12)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestra.buzz import BuzzError
from orchestra.trial.clients import ClientPool, relay_operation
from orchestra.trial.identities import Identity

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


async def create_trial_channel(user_client: Any, *, name: str, description: str) -> str:
    result = await relay_operation(
        lambda: user_client.channels_create(
            name=name, type="stream", visibility="private", description=description
        )
    )
    channel_id = result.get("channel_id") if isinstance(result, dict) else None
    if not isinstance(channel_id, str) or not channel_id:
        raise BuzzError("relay_error", "channels create returned no channel_id")
    return channel_id


async def add_member(user_client: Any, channel_id: str, pubkey: str, role: str) -> None:
    await relay_operation(
        lambda: user_client.channels_add_member(channel=channel_id, pubkey=pubkey, role=role)
    )


def _differs(row: dict[str, Any] | None, name: str, about: str | None) -> bool:
    if not row or not row.get("found"):
        return True
    shown = row.get("display_name") or row.get("name")
    return shown != name or (about is not None and (row.get("about") or "") != about)


async def publish_profiles(reader: Any, profiles: Sequence[Profile]) -> int:
    """Publish only profiles that are missing or differ; returns how many were published.

    Stable identities are shared by concurrent trials, so each identity's read-compare-publish
    runs under its pool's per-identity lock.
    """
    rows: dict[str, dict[str, Any]] = {}
    pubkeys = list(dict.fromkeys(p.identity.pubkey for p in profiles if not p.fresh))
    for start in range(0, len(pubkeys), PROFILE_BATCH):
        batch = pubkeys[start : start + PROFILE_BATCH]
        for row in await relay_operation(lambda batch=batch: reader.users_get(pubkey=batch)):
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
            current = await relay_operation(lambda client=client: client.users_get())
            if not _differs(current[0] if current else None, identity.name, profile.about):
                continue  # another trial published it meanwhile
            await _set_profile(client, identity.name, profile.about)
            published += 1
    return published


async def _set_profile(client: Any, name: str, about: str | None) -> None:
    await relay_operation(lambda: client.users_set_profile(name=name, about=about))


async def send_message(
    client: Any,
    channel_id: str,
    content: str,
    *,
    mention: list[str] | None,
    reply_to: str | None = None,
) -> str | None:
    """`messages send`; the event id, or None when the result carries none."""
    result = await relay_operation(
        lambda: client.messages_send(
            channel=channel_id, content=content, mention=mention, reply_to=reply_to
        )
    )
    event_id = result.get("event_id") if isinstance(result, dict) else None
    return event_id if isinstance(event_id, str) and event_id else None


async def archive_channel(user_client: Any, channel_id: str) -> None:
    try:
        await relay_operation(lambda: user_client.channels_archive(channel=channel_id))
    except BuzzError as error:
        if "already archived" not in error.message:
            raise
