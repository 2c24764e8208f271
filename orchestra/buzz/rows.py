"""Output rows built from relay events (buzz-cli.md §6 channel rows, §6.4 members, §7 profiles)."""

import json
from typing import Any

from orchestra.buzz.mentions import display_name
from orchestra.nostr import tags
from orchestra.nostr.bech32 import encode_npub

ROLE_ORDER = {"owner": 0, "admin": 1, "member": 2, "bot": 3}
EventDict = dict[str, Any]


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def channel_row(metadata: EventDict) -> dict[str, Any]:
    """A channel row from the relay-signed channel metadata (protocol.md §9.9)."""
    metadata_tags = tags.of_event(metadata)

    def value(name: str) -> str | None:
        return tags.first_value(metadata_tags, name)

    return {
        "channel_id": value("d"),
        "name": value("name") or "",
        "channel_type": value("t") or "stream",
        "visibility": "private" if tags.has(metadata_tags, "private") else "open",
        "archived": tags.has_value(metadata_tags, "archived", ("true",)),
        "about": value("about") or "",
        "ttl_seconds": _int_or_none(value("ttl")),
        "topic": None,
        "purpose": None,
        "creator": value("P"),
        "created_at": _int_or_none(value("created_at")),
    }


def member_roles(members_event: EventDict) -> dict[str, str]:
    """pubkey → role from a relay-signed member list (protocol.md §9.9)."""
    return {
        tag[1]: tag[2] if len(tag) >= 3 else "member"
        for tag in tags.named(tags.of_event(members_event), "p")
        if len(tag) >= 2
    }


def profile_content(profile_event: EventDict | None) -> dict[str, Any]:
    if profile_event is None:
        return {}
    try:
        content = json.loads(profile_event.get("content", ""))
    except (ValueError, TypeError):
        return {}
    return content if isinstance(content, dict) else {}


def member_rows(roles: dict[str, str], profiles: dict[str, EventDict]) -> list[dict[str, Any]]:
    ordered = sorted(
        roles.items(), key=lambda member: (ROLE_ORDER.get(member[1], len(ROLE_ORDER)), member[0])
    )
    return [
        {"pubkey": pk, "role": role, "name": display_name(profile_content(profiles.get(pk)))}
        for pk, role in ordered
    ]


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def profile_row(pubkey: str, profile_event: EventDict | None) -> dict[str, Any]:
    content = profile_content(profile_event)
    bot = content.get("bot")
    return {
        "pubkey": pubkey,
        "npub": encode_npub(pubkey),
        "found": profile_event is not None,
        "name": _str_or_none(content.get("name")),
        "display_name": _str_or_none(content.get("display_name")),
        "about": _str_or_none(content.get("about")),
        "picture": _str_or_none(content.get("picture")),
        "bot": bot if isinstance(bot, bool) else None,
        "updated_at": profile_event["created_at"] if profile_event is not None else None,
    }


def compact_message(event: EventDict) -> dict[str, Any]:
    return {key: event[key] for key in ("id", "pubkey", "created_at", "content")}
