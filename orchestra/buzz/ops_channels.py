"""`channels …` (buzz-cli.md §6)."""

import uuid
from typing import Any

from orchestra.buzz import validate
from orchestra.buzz.errors import BuzzError, not_found, user_error
from orchestra.buzz.lookups import Lookups
from orchestra.buzz.ops_messages import ok_message
from orchestra.buzz.rows import channel_row, member_rows
from orchestra.nostr.kinds import Kind
from orchestra.nostr.limits import CHANNEL_ABOUT_MAX_CHARS, CHANNEL_NAME_MAX_CHARS

TTL_RANGE = (60, 31_536_000)
DUPLICATE_RESIGN_ATTEMPTS = 5


def _name(value: str) -> str:
    if not 1 <= len(value.strip()) <= CHANNEL_NAME_MAX_CHARS:
        raise user_error(f"--name must be 1-{CHANNEL_NAME_MAX_CHARS} characters")
    return value


def _about(value: str) -> str:
    if len(value) > CHANNEL_ABOUT_MAX_CHARS:
        raise user_error(f"--description must be at most {CHANNEL_ABOUT_MAX_CHARS} characters")
    return value


def _ttl(value: int) -> int:
    return validate.integer_in_range("--ttl", value, *TTL_RANGE)


def _published(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "event_id": result["event_id"],
        "accepted": True,
        "message": ok_message(result["message"]),
    }


class ChannelsOps(Lookups):
    async def _publish_action(self, kind: int, tags: list[list[str]]) -> dict[str, Any]:
        """Publish a state-changing channel event so that it always takes effect.

        An identical event in the same second has the same id and the relay answers
        `duplicate: already have this event` without applying it again; after an intervening
        change (archive, unarchive, archive) that would silently drop the action, so the event is
        re-signed one second later instead.
        """
        created_at = None
        for _ in range(DUPLICATE_RESIGN_ATTEMPTS):
            result = await self.publish(kind, "", tags, created_at=created_at)
            if not result["message"].startswith("duplicate: already have this event"):
                return result
            created_at = result["event"]["created_at"] + 1
        return result

    async def channels_create(
        self,
        name: str,
        type: str = "stream",  # the CLI flag's name (buzz-cli.md §12)
        visibility: str = "open",
        description: str | None = None,
        ttl: int | None = None,
    ) -> dict[str, Any]:
        tags = [
            ["name", _name(name)],
            ["channel_type", validate.choice("--type", type, ("stream", "forum"))],
            ["visibility", validate.choice("--visibility", visibility, ("open", "private"))],
        ]
        if description is not None:
            tags.append(["about", _about(description)])
        if ttl is not None:
            tags.append(["ttl", str(_ttl(ttl))])
        channel = str(uuid.uuid4())
        result = await self.publish(Kind.CREATE_CHANNEL, "", [["h", channel], *tags])
        return {
            "channel_id": channel,
            **_published(result),
            "name": name,
            "channel_type": type,
            "visibility": visibility,
            "about": description or "",
            "ttl_seconds": ttl,
        }

    async def channels_get(self, channel: str) -> dict[str, Any]:
        return channel_row(await self.require_channel_metadata(validate.channel_id(channel)))

    async def channels_search(
        self,
        query: str,
        exact: bool = False,
        include_archived: bool = False,
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        validate.integer_in_range("--limit", limit, 1)
        needle = query.strip().lower()
        events, _ = await self.paged_query({"kinds": [Kind.CHANNEL_METADATA]})
        rows = []
        for row in map(channel_row, events):
            name = row["name"].lower()
            if (name == needle if exact else needle in name) and (
                include_archived or not row["archived"]
            ):
                rows.append(row)
        rows.sort(key=lambda row: (row["name"].lower(), row["channel_id"]))
        return rows[:limit]

    async def channels_members(self, channel: str) -> list[dict[str, Any]]:
        channel = validate.channel_id(channel)
        roles = await self.member_roles(channel)
        if roles is None:
            raise not_found(f"channel {channel} not found or not visible")
        return member_rows(roles, await self.profile_events(list(roles)))

    async def channels_add_member(
        self, channel: str, pubkey: str, role: str = "member"
    ) -> dict[str, Any]:
        channel = validate.channel_id(channel)
        member = validate.pubkey(pubkey, "--pubkey")
        validate.choice("role", role, ("member", "bot", "admin"))
        result = await self._publish_action(Kind.PUT_USER, [["h", channel], ["p", member, role]])
        return {"channel_id": channel, "pubkey": member, "role": role, **_published(result)}

    async def channels_remove_member(self, channel: str, pubkey: str) -> dict[str, Any]:
        channel = validate.channel_id(channel)
        member = validate.pubkey(pubkey, "--pubkey")
        result = await self._publish_action(Kind.REMOVE_USER, [["h", channel], ["p", member]])
        return {"channel_id": channel, "pubkey": member, "removed": True, **_published(result)}

    async def channels_update(
        self,
        channel: str,
        name: str | None = None,
        description: str | None = None,
        visibility: str | None = None,
        ttl: int | None = None,
        no_ttl: bool = False,
    ) -> dict[str, Any]:
        channel = validate.channel_id(channel)
        if ttl is not None and no_ttl:
            raise user_error("--ttl and --no-ttl cannot be combined")
        tags = [["h", channel]]
        if name is not None:
            tags.append(["name", _name(name)])
        if description is not None:
            tags.append(["about", _about(description)])
        if visibility is not None:
            choice = validate.choice("--visibility", visibility, ("open", "private"))
            tags.append(["visibility", choice])
        if ttl is not None:
            tags.append(["ttl", str(_ttl(ttl))])
        if no_ttl:
            tags.append(["ttl", "0"])
        if len(tags) == 1:
            raise user_error(
                "nothing to change: give --name, --description, --visibility, --ttl or --no-ttl"
            )
        result = await self._publish_action(Kind.EDIT_METADATA, tags)
        row = channel_row(await self.require_channel_metadata(channel))
        return {**row, **_published(result)}

    async def channels_archive(self, channel: str) -> dict[str, Any]:
        return await self._set_archived(channel, True)

    async def channels_unarchive(self, channel: str) -> dict[str, Any]:
        return await self._set_archived(channel, False)

    async def _set_archived(self, channel: str, archived: bool) -> dict[str, Any]:
        channel = validate.channel_id(channel)
        flag = "true" if archived else "false"
        result = await self._publish_action(
            Kind.EDIT_METADATA, [["h", channel], ["archived", flag]]
        )
        return {"channel_id": channel, "archived": archived, **_published(result)}

    async def channels_join(self, channel: str) -> dict[str, Any]:
        channel = validate.channel_id(channel)
        try:
            result = await self._publish_action(Kind.JOIN_REQUEST, [["h", channel]])
        except BuzzError as exc:
            if exc.message.startswith("duplicate: already a member"):
                return {
                    "channel_id": channel,
                    "joined": True,
                    "already_member": True,
                    "event_id": None,
                    "accepted": True,
                    "message": exc.message,
                }
            raise
        return {
            "channel_id": channel,
            "joined": True,
            "already_member": False,
            **_published(result),
        }

    async def channels_leave(self, channel: str) -> dict[str, Any]:
        channel = validate.channel_id(channel)
        result = await self._publish_action(Kind.LEAVE_REQUEST, [["h", channel]])
        return {"channel_id": channel, "left": True, **_published(result)}
