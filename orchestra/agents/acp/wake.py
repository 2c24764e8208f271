"""The wake rule (agent-harness.md §1.4): which kind-9 events wake the agent."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from orchestra.agents.acp.config import AcpConfig
from orchestra.nostr import tags

SEEN_IDS = 10_000


def p_tags_pubkey(event: dict[str, Any], pubkey: str) -> bool:
    return pubkey in tags.mentions(tags.of_event(event))


def channel_of(event: dict[str, Any]) -> str | None:
    """The value of the event's single `h` tag (§1.4 check 3)."""
    return tags.sole_value(tags.of_event(event), "h")


class WakeRule:
    """Stateful only for de-duplication (the last 10,000 ids)."""

    def __init__(
        self, config: AcpConfig, start_time: int, is_served: Callable[[str], bool]
    ) -> None:
        self._config = config
        self._self = config.keys.pubkey
        self._since = start_time - config.replay_secs
        self._is_served = is_served
        self._seen: OrderedDict[str, None] = OrderedDict()

    @property
    def since(self) -> int:
        return self._since

    def check(self, event: dict[str, Any]) -> str | None:
        """The §1.4 reason the event is ignored, or None when it wakes the agent."""
        event_id = event.get("id", "")
        if event_id in self._seen:
            return "duplicate"
        self._seen[event_id] = None
        if len(self._seen) > SEEN_IDS:
            self._seen.popitem(last=False)
        if event.get("created_at", 0) < self._since:
            return "before_start"
        channel = channel_of(event)
        if channel is None or not self._is_served(channel):
            return "unsubscribed_channel"
        if event.get("pubkey") == self._self:
            return "self"
        if self._config.subscribe == "mentions" and not p_tags_pubkey(event, self._self):
            return "not_mentioned"
        if not self._author_allowed(event.get("pubkey", "")):
            return "author_gate"
        return None

    def _author_allowed(self, author: str) -> bool:
        mode = self._config.respond_to
        owner = self._config.owner
        if mode == "anyone":
            return True
        if mode == "owner-only":
            return owner is not None and author == owner
        if mode == "allowlist":
            return author == owner or author in self._config.allowlist
        return False
