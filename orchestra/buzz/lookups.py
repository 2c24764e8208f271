"""Reads shared by several operations: channel state, profiles, single events."""

from typing import Any

from orchestra.buzz.core import ClientCore
from orchestra.buzz.errors import not_found
from orchestra.buzz.rows import EventDict, member_roles, profile_content
from orchestra.nostr.kinds import Kind

MAX_FILTER_VALUES = 1000


class Lookups(ClientCore):
    async def channel_metadata(self, channel: str) -> EventDict | None:
        events = await self.query_one({"kinds": [Kind.CHANNEL_METADATA], "#d": [channel]})
        return _newest(events)

    async def require_channel_metadata(self, channel: str) -> EventDict:
        metadata = await self.channel_metadata(channel)
        if metadata is None:
            raise not_found(f"channel {channel} not found or not visible")
        return metadata

    async def member_roles(self, channel: str) -> dict[str, str] | None:
        """pubkey → role of the channel's current members; None when not found or not visible."""
        members = _newest(await self.query_one({"kinds": [Kind.CHANNEL_MEMBERS], "#d": [channel]}))
        return member_roles(members) if members is not None else None

    async def event_by_id(self, event_id: str) -> EventDict | None:
        return _newest(await self.query_one({"ids": [event_id]}))

    async def latest_by_author(self, kind: int, pubkeys: list[str]) -> dict[str, EventDict]:
        """The newest event of `kind` per author (replaceable kinds), whatever the relay's page size.

        Authors already answered are dropped from the next query, so each round trip either finds
        someone new or proves the rest have no such event.
        """
        found: dict[str, EventDict] = {}
        remaining = list(dict.fromkeys(pubkeys))
        while remaining:
            batch = remaining[:MAX_FILTER_VALUES]
            events = await self.query_one({"kinds": [kind], "authors": batch})
            for event in events:
                current = found.get(event["pubkey"])
                if current is None or event["created_at"] > current["created_at"]:
                    found[event["pubkey"]] = event
            answered = {event["pubkey"] for event in events}
            if not answered:
                remaining = remaining[MAX_FILTER_VALUES:]
            else:
                remaining = [pk for pk in remaining if pk not in found]
        return found

    async def profile_events(self, pubkeys: list[str]) -> dict[str, EventDict]:
        return await self.latest_by_author(Kind.PROFILE, pubkeys)

    async def profile_contents(self, pubkeys: list[str]) -> dict[str, dict[str, Any]]:
        events = await self.profile_events(pubkeys)
        return {pk: profile_content(event) for pk, event in events.items()}


def _newest(events: list[EventDict]) -> EventDict | None:
    return max(events, key=lambda event: (event["created_at"], event["id"]), default=None)
