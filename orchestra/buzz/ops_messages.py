"""`messages send|get|thread` (buzz-cli.md §5)."""

import asyncio
from typing import Any

from orchestra.buzz import validate
from orchestra.buzz.errors import not_found, user_error
from orchestra.buzz.lookups import Lookups
from orchestra.buzz.rows import EventDict
from orchestra.buzz.send_plan import (
    check_content,
    explicit_identities,
    needs_preflight,
    plan_recipients,
)
from orchestra.nostr import tags
from orchestra.nostr.kinds import CHANNEL_MESSAGE_KINDS, Kind

MAX_READ_LIMIT = 10_000


def _channel_of(event: EventDict) -> str | None:
    return tags.channel_id(tags.of_event(event))


def _thread_root(event: EventDict) -> str:
    """buzz-cli.md §5.1.3 step 2: the thread rule's root, else the event itself."""
    return tags.thread_root(tags.of_event(event)) or str(event["id"])


def ok_message(message: str) -> str:
    """The relay's `OK` text, `stored` when empty (upstream's wording)."""
    return message or "stored"


class MessagesOps(Lookups):
    async def messages_send(
        self,
        channel: str,
        content: str,
        mention: list[str] | None = None,
        reply_to: str | None = None,
        kind: int = Kind.MESSAGE,
    ) -> dict[str, Any]:
        channel = validate.channel_id(channel)
        if kind != Kind.MESSAGE:
            raise user_error("only kind 9 messages are supported")
        parent_id = validate.event_id(reply_to, "--reply-to event id") if reply_to else None
        check_content(content)
        explicit = explicit_identities(list(mention or []), content)
        # The two reads are independent: run them together, then report failures in spec order.
        preflight, threading = await asyncio.gather(
            self._recipients(channel, content, explicit),
            self._thread_tags(channel, parent_id),
            return_exceptions=True,
        )
        if isinstance(preflight, BaseException):
            raise preflight
        if isinstance(threading, BaseException):
            raise threading
        recipients = preflight
        e_tags, root_id = threading
        message_tags = [["h", channel], *e_tags, *(["p", pk] for pk in recipients)]
        published = await self.publish(Kind.MESSAGE, content, message_tags)
        return {
            "event_id": published["event_id"],
            "accepted": True,
            "message": ok_message(published["message"]),
            "mention_pubkeys": recipients,
            "channel_id": channel,
            "reply_to_event_id": parent_id,
            "root_event_id": root_id,
            "created_at": published["event"]["created_at"],
        }

    async def _recipients(self, channel: str, content: str, explicit: list[str]) -> list[str]:
        if not needs_preflight(content, explicit):
            return []
        members = await self.member_roles(channel)
        if members is None:
            raise user_error(
                "could not load channel membership for mention preflight: "
                f"channel {channel} not found or not visible"
            )
        profiles = await self.profile_contents(list(members))
        return plan_recipients(channel, content, explicit, members, profiles)

    async def _event_in_channel(self, channel: str, event_id: str, what: str) -> EventDict:
        """The event, which must exist and be in the channel (`what` names it in errors)."""
        event = await self.event_by_id(event_id)
        if event is None:
            raise not_found(f"{what} {event_id} not found")
        if _channel_of(event) != channel:
            raise user_error(f"{what} {event_id} is in another channel")
        return event

    async def _thread_tags(
        self, channel: str, parent_id: str | None
    ) -> tuple[list[list[str]], str | None]:
        if parent_id is None:
            return [], None
        parent = await self._event_in_channel(channel, parent_id, "reply-to event")
        root_id = _thread_root(parent)
        return tags.reply_tags(parent_id, root_id), root_id

    async def messages_get(
        self,
        channel: str,
        limit: int = 50,
        before: int | None = None,
        since: int | None = None,
        kinds: list[int] | None = None,
        all: bool = False,  # the CLI flag's name (buzz-cli.md §12)
    ) -> list[EventDict]:
        channel = validate.channel_id(channel)
        validate.integer_in_range("--limit", limit, 1, MAX_READ_LIMIT)
        if before is not None:
            validate.integer_in_range("--before", before, 0)
        base: dict[str, Any] = {"kinds": list(kinds or CHANNEL_MESSAGE_KINDS), "#h": [channel]}
        if since is not None:
            base["since"] = validate.integer_in_range("--since", since, 0)
        wanted = None if all else limit
        events, more = await self.paged_query(base, wanted, before=before)
        if more:
            self.warn(
                "more_messages",
                f"returned the newest {limit} messages; older ones exist (use --before or --all)",
            )
        if not events:
            await self.require_channel_metadata(channel)
        return events

    async def messages_thread(self, channel: str, event: str, limit: int = 500) -> list[EventDict]:
        channel = validate.channel_id(channel)
        event_id = validate.event_id(event, "--event id")
        validate.integer_in_range("--limit", limit, 1, MAX_READ_LIMIT)
        anchor = await self._event_in_channel(channel, event_id, "event")
        root_id = _thread_root(anchor)
        root = anchor if root_id == event_id else await self.event_by_id(root_id)
        if root is None:
            raise not_found(f"thread root {root_id} of event {event_id} not found")
        base = {"kinds": [Kind.MESSAGE], "#h": [channel], "#e": [root_id]}
        replies, _ = await self.paged_query(base)
        if len(replies) > limit:
            self.warn(
                "thread_truncated",
                f"showing the newest {limit} of {len(replies)} replies; use --limit",
            )
            replies = replies[-limit:]
        return [root, *replies]
