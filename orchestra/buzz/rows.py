"""Output rows built from relay events (buzz-cli.md §6 channel rows, §6.4 members, §7 profiles)."""

import json
from typing import Any

from orchestra.buzz.mentions import display_name
from orchestra.nostr.bech32 import encode_npub

ROLE_ORDER = {"owner": 0, "admin": 1, "member": 2, "bot": 3}
EventDict = dict[str, Any]


def tag_value(event: EventDict, name: str) -> str | None:
    for tag in event.get("tags", []):
        if len(tag) >= 2 and tag[0] == name:
            return tag[1]
    return None


def has_tag(event: EventDict, name: str) -> bool:
    return any(tag and tag[0] == name for tag in event.get("tags", []))


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def channel_row(metadata: EventDict) -> dict[str, Any]:
    """A channel row from the relay-signed kind 39000."""
    return {
        "channel_id": tag_value(metadata, "d"),
        "name": tag_value(metadata, "name") or "",
        "channel_type": tag_value(metadata, "t") or "stream",
        "visibility": "private" if has_tag(metadata, "private") else "open",
        "archived": any(
            len(tag) >= 2 and tag[0] == "archived" and tag[1] == "true" for tag in metadata["tags"]
        ),
        "about": tag_value(metadata, "about") or "",
        "ttl_seconds": _int_or_none(tag_value(metadata, "ttl")),
        "topic": None,
        "purpose": None,
        "creator": tag_value(metadata, "P"),
        "created_at": _int_or_none(tag_value(metadata, "created_at")),
    }


def member_roles(members_event: EventDict) -> dict[str, str]:
    """pubkey → role from a kind 39002."""
    return {
        tag[1]: tag[2] if len(tag) >= 3 else "member"
        for tag in members_event.get("tags", [])
        if len(tag) >= 2 and tag[0] == "p"
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
    rows = [
        {"pubkey": pk, "role": role, "name": display_name(profile_content(profiles.get(pk)))}
        for pk, role in roles.items()
    ]
    rows.sort(key=lambda row: (ROLE_ORDER.get(row["role"], len(ROLE_ORDER)), row["pubkey"]))
    return rows


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


def thread_root(event: EventDict) -> str:
    """buzz-cli.md §5.1.3 step 2: the `root`-marked e tag, else the `reply`-marked one, else itself."""
    marked = {
        tag[3]: tag[1]
        for tag in reversed(event.get("tags", []))
        if len(tag) >= 4 and tag[0] == "e" and tag[3] in ("root", "reply")
    }
    return marked.get("root") or marked.get("reply") or event["id"]


def compact_message(event: EventDict) -> dict[str, Any]:
    return {key: event[key] for key in ("id", "pubkey", "created_at", "content")}
