"""Pure construction of the evidence document from raw relay events (orchestrator.md §8.1-§8.4).

No I/O here: the exporter (`orchestra.evidence.export`) collects raw events from the relay,
and dataset tests feed recorded events straight into `build_evidence`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SCHEMA_VERSION = 1
MESSAGE_KINDS = (9, 40002, 40008, 45001, 45003)
TRANSCRIPT_CAP = 1000


def _string_or_empty(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def clean_tags(raw_tags: object) -> list[list[str]]:
    """Keep only tags that are non-empty lists of strings, in original order."""
    if not isinstance(raw_tags, list):
        return []
    return [
        list(tag)
        for tag in raw_tags
        if isinstance(tag, list) and tag and all(isinstance(item, str) for item in tag)
    ]


def first_h_tag(tags: Sequence[Sequence[str]]) -> str | None:
    for tag in tags:
        if tag[0] == "h":
            return tag[1] if len(tag) >= 2 else None
    return None


def author_lookup(
    identities: Mapping[str, Mapping[str, Any]], directory: Sequence[Mapping[str, Any]]
) -> dict[str, tuple[str, str]]:
    """pubkey -> (author name, author role).

    Directory rows are applied after identities, so a directory name wins on a collision.
    """
    lookup: dict[str, tuple[str, str]] = {}
    for name, identity in identities.items():
        lookup[str(identity["pubkey"])] = (name, str(identity["role"]))
    for row in directory:
        lookup[str(row["pubkey"])] = (str(row["name"]), str(row["role"]))
    return lookup


def normalize_message(raw: Mapping[str, Any], lookup: Mapping[str, tuple[str, str]]) -> dict:
    tags = clean_tags(raw.get("tags"))
    pubkey = _string_or_empty(raw.get("pubkey"))
    author, author_role = lookup.get(pubkey, ("unknown", "unknown"))
    reply_to = next(
        (tag[1] for tag in tags if tag[0] == "e" and len(tag) >= 4 and tag[3] == "reply"), None
    )
    return {
        "id": _string_or_empty(raw.get("id")),
        "kind": _int_or_none(raw.get("kind")),
        "created_at": _int_or_none(raw.get("created_at")),
        "pubkey": pubkey,
        "author": author,
        "author_role": author_role,
        "content": _string_or_empty(raw.get("content")),
        "tags": tags,
        "channel_id": first_h_tag(tags),
        "reply_to_event_id": reply_to,
        "mentioned_pubkeys": [tag[1] for tag in tags if tag[0] == "p" and len(tag) >= 2],
    }


def is_channel_message(raw: Mapping[str, Any], channel_id: str) -> bool:
    return raw.get("kind") in MESSAGE_KINDS and first_h_tag(clean_tags(raw.get("tags"))) == (
        channel_id
    )


def order_messages(
    messages: Iterable[dict], *, task_event_id: str | None, arrival: Mapping[str, int]
) -> list[dict]:
    """Ascending created_at (null last); within a second the task event first, then live
    arrival order, then events the subscription never saw by id (§8.4)."""

    def key(message: dict) -> tuple:
        created = message["created_at"]
        event_id = message["id"]
        if event_id == task_event_id and task_event_id:
            within = (0, 0, "")
        elif event_id in arrival:
            within = (1, arrival[event_id], "")
        else:
            within = (2, 0, event_id)
        return (created is None, created or 0, within)

    return sorted(messages, key=key)


def build_messages(
    raw_events: Iterable[Mapping[str, Any]],
    *,
    channel_id: str,
    identities: Mapping[str, Mapping[str, Any]],
    directory: Sequence[Mapping[str, Any]],
    task_event_id: str | None,
    arrival: Mapping[str, int] | None = None,
) -> tuple[list[dict], bool]:
    """Normalised, ordered, capped messages and the `truncated` flag."""
    lookup = author_lookup(identities, directory)
    unique: dict[str, dict] = {}
    for raw in raw_events:
        if isinstance(raw, Mapping) and is_channel_message(raw, channel_id):
            message = normalize_message(raw, lookup)
            unique.setdefault(message["id"], message)
    ordered = order_messages(unique.values(), task_event_id=task_event_id, arrival=arrival or {})
    truncated = len(ordered) >= TRANSCRIPT_CAP
    return ordered[-TRANSCRIPT_CAP:], truncated


def build_evidence(
    *,
    run_id: str,
    trial_id: str,
    channel_id: str,
    task_name: str,
    task_event_id: str | None,
    completion_message_id: str | None,
    identities: Mapping[str, Mapping[str, Any]],
    directory: Sequence[Mapping[str, Any]],
    scripted_events: Sequence[Mapping[str, Any]],
    observed_channels: Sequence[Mapping[str, Any]],
    raw_events: Iterable[Mapping[str, Any]],
    arrival: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The complete `buzz-evidence.json` document (schema version 1).

    `identities`: display name -> {role, pubkey} for the trial user and the agents.
    `directory`: rows {identity_id, name, role, pubkey, about} in fixture order.
    `arrival`: event id -> first-seen sequence number from the trial's live subscription.
    """
    messages, truncated = build_messages(
        raw_events,
        channel_id=channel_id,
        identities=identities,
        directory=directory,
        task_event_id=task_event_id,
        arrival=arrival,
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "trial": {"run_id": run_id, "trial_id": trial_id, "channel_id": channel_id},
        "task_name": task_name,
        "task_event_id": task_event_id,
        "completion_message_id": completion_message_id,
        "identities": {
            name: {"role": str(value["role"]), "pubkey": str(value["pubkey"])}
            for name, value in identities.items()
        },
        "directory": [
            {
                "identity_id": str(row["identity_id"]),
                "name": str(row["name"]),
                "role": str(row["role"]),
                "pubkey": str(row["pubkey"]),
                "about": str(row.get("about") or ""),
            }
            for row in directory
        ],
        "scripted_events": [dict(row) for row in scripted_events],
        "observed_channels": [dict(row) for row in observed_channels],
        "message_count": len(messages),
        "truncated": truncated,
        "messages": messages,
    }


def transcript_of(evidence: Mapping[str, Any]) -> dict[str, Any]:
    """`transcript.json`: the same normalised messages without the trial context (§8.5)."""
    return {
        "channel_id": evidence["trial"]["channel_id"],
        "message_count": evidence["message_count"],
        "truncated": evidence["truncated"],
        "messages": evidence["messages"],
    }
