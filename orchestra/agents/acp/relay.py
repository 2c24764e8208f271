"""buzz-acp's relay side through the client library (agent-harness.md §1.3, §1.6.4, §1.9).

One authenticated connection; fixed subscription ids; one-shot queries as `acp-q-<n>`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from orchestra.agents.acp.config import AcpConfig
from orchestra.agents.acp.prompt import ThreadContext, select_thread_messages
from orchestra.backoff import Backoff
from orchestra.buzz import BuzzClient, BuzzError
from orchestra.buzz.subscription import Subscription
from orchestra.errors import OrchestraError
from orchestra.nostr import tags
from orchestra.nostr.kinds import Kind

CONNECT_BACKOFF = Backoff.steps(1, 2, 4, 8, 15)
RECONNECT_BACKOFF = Backoff.steps(1, 2, 4, 8, 15, 30)
THREAD_FETCH_LIMIT = 500
log = logging.getLogger("relay")


class RelayUnavailable(OrchestraError):
    """The relay could not be connected and authenticated within the connect timeout (exit 2)."""

    exit_code = 2


def discovery_filters(self_pubkey: str) -> list[dict[str, Any]]:
    return [{"kinds": [Kind.CHANNEL_MEMBERS], "#p": [self_pubkey]}]


def channel_filters(config: AcpConfig, channel: str, since: int) -> list[dict[str, Any]]:
    wake: dict[str, Any] = {"kinds": [Kind.MESSAGE], "#h": [channel], "since": since}
    if config.subscribe == "mentions":
        wake["#p"] = [config.keys.pubkey]
    # The member list of the channel too: a newer one without us no longer matches the
    # discovery filter (`#p` = self), so removal is only visible here.
    return [
        wake,
        {"kinds": [Kind.CHANNEL_METADATA], "#d": [channel]},
        {"kinds": [Kind.CHANNEL_MEMBERS], "#d": [channel]},
    ]


def profile_name(profile: Mapping[str, Any]) -> str | None:
    try:
        content = json.loads(profile.get("content", ""))
    except ValueError:
        return None
    if not isinstance(content, dict):
        return None
    for key in ("display_name", "name"):
        value = content.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


class RelayLink:
    def __init__(self, config: AcpConfig) -> None:
        self.config = config
        self.client = BuzzClient.from_keys(config.relay_url, config.keys)
        self._query_ids = itertools.count(1)

    async def connect(self) -> None:
        """Retry with backoff 1, 2, 4, 8, 15 s (then 15 s) until the connect timeout."""
        deadline = time.monotonic() + self.config.connect_timeout_s
        for retry in itertools.count(1):
            try:
                remaining = deadline - time.monotonic()
                async with asyncio.timeout(max(remaining, 0.1)):
                    await self.client.connection()
                return
            except (BuzzError, TimeoutError) as error:
                reason = getattr(error, "message", None) or "timed out"
                delay = CONNECT_BACKOFF.delay(retry)
                if time.monotonic() + delay >= deadline:
                    raise RelayUnavailable(reason) from None
                log.warning("relay connection failed: %s; retrying in %ss", reason, delay)
                await asyncio.sleep(delay)

    def subscribe(
        self,
        sub_id: str,
        filters: list[dict[str, Any]],
        on_disconnect: Callable[[str], Any] | None,
    ) -> Subscription:
        return self.client.subscribe(
            filters,
            sub_id,
            reconnect=True,
            backoff=RECONNECT_BACKOFF,
            on_disconnect=on_disconnect,
        )

    async def query(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return await self.client.query(filters, f"acp-q-{next(self._query_ids)}")

    async def display_names(self, pubkeys: Iterable[str]) -> dict[str, str]:
        wanted = sorted(set(pubkeys))
        if not wanted:
            return {}
        profiles = await self.query([{"kinds": [Kind.PROFILE], "authors": wanted}])
        newest: dict[str, dict[str, Any]] = {}
        for profile in profiles:
            author = profile.get("pubkey", "")
            if author not in newest or profile.get("created_at", 0) > newest[author].get(
                "created_at", 0
            ):
                newest[author] = profile
        names = {author: profile_name(profile) for author, profile in newest.items()}
        return {author: name for author, name in names.items() if name}

    async def thread_context(
        self, channel: str, root: str, exclude_ids: set[str], limit: int
    ) -> ThreadContext:
        roots = await self.query([{"ids": [root]}])
        replies = await self.query(
            [
                {
                    "kinds": [Kind.MESSAGE],
                    "#h": [channel],
                    "#e": [root],
                    "limit": THREAD_FETCH_LIMIT,
                }
            ]
        )
        root_event = roots[0] if roots else None
        return select_thread_messages(root_event, replies, exclude_ids, limit, root)

    async def core_memory(self) -> str | None:
        try:
            entry = await self.client.mem_get("core")
        except BuzzError as error:
            if error.error == "not_found":
                return None
            raise
        value = entry.get("value") if isinstance(entry, dict) else entry
        return value if isinstance(value, str) else None

    async def post_failure_notice(self, channel: str, anchor: str, reason: str) -> str:
        content = f"⚠️ I could not finish processing this request ({reason}). Please try again."
        notice_tags = [
            ["h", channel],
            *tags.reply_tags(anchor, anchor),
            ["buzz", tags.HARNESS_NOTICE],
        ]
        result = await self.client.publish(Kind.MESSAGE, content, notice_tags)
        return str(result["event_id"])

    async def close(self) -> None:
        await self.client.close()
