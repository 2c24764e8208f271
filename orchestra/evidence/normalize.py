"""Pure construction of the evidence document from raw relay events (orchestrator.md §8.1-§8.4).

No I/O here: the exporter (`orchestra.evidence.export`) collects raw events from the relay,
and dataset tests feed recorded events straight into `build_evidence`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from orchestra.nostr import tags as tag_list
from orchestra.nostr.kinds import CHANNEL_MESSAGE_KINDS

SCHEMA_VERSION = 1
TRANSCRIPT_CAP = 1000


class Message(TypedDict):
    """One normalised channel message (orchestrator.md §8.2)."""

    id: str
    kind: int | None
    created_at: int | None
    pubkey: str
    author: str
    author_role: str
    content: str
    tags: list[list[str]]
    channel_id: str | None
    reply_to_event_id: str | None
    mentioned_pubkeys: list[str]


def _string_or_empty(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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


def normalize_message(raw: Mapping[str, Any], lookup: Mapping[str, tuple[str, str]]) -> Message:
    tags = tag_list.of_event(raw)
    pubkey = _string_or_empty(raw.get("pubkey"))
    author, author_role = lookup.get(pubkey, ("unknown", "unknown"))
    return {
        "id": _string_or_empty(raw.get("id")),
        "kind": _int_or_none(raw.get("kind")),
        "created_at": _int_or_none(raw.get("created_at")),
        "pubkey": pubkey,
        "author": author,
        "author_role": author_role,
        "content": _string_or_empty(raw.get("content")),
        "tags": tags,
        "channel_id": tag_list.channel_id(tags),
        # §8.2: the reply marker only, not the thread rule's parent (a root-only tag is no reply).
        "reply_to_event_id": tag_list.marked_reference(tags, tag_list.REPLY),
        "mentioned_pubkeys": tag_list.mentions(tags),
    }


def is_channel_message(raw: Mapping[str, Any], channel_id: str) -> bool:
    return (
        raw.get("kind") in CHANNEL_MESSAGE_KINDS
        and tag_list.channel_id(tag_list.of_event(raw)) == channel_id
    )


def order_messages(
    messages: Iterable[Message], *, task_event_id: str | None, arrival: Mapping[str, int]
) -> list[Message]:
    """Ascending created_at (null last); within a second the task event first, then live
    arrival order, then events the subscription never saw by id (§8.4)."""

    def key(message: Message) -> tuple[bool, int, tuple[int, int, str]]:
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
) -> tuple[list[Message], bool]:
    """Normalised, ordered, capped messages and the `truncated` flag."""
    lookup = author_lookup(identities, directory)
    unique: dict[str, Message] = {}
    for raw in raw_events:
        if (
            isinstance(raw, Mapping)
            and is_channel_message(raw, channel_id)
            and not tag_list.is_harness_notice(tag_list.of_event(raw))
        ):
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
    channel_members: Sequence[Mapping[str, Any]] = (),
    agent_memory: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    trace: Sequence[Mapping[str, Any]] = (),
    relay_events: Sequence[Mapping[str, Any]] = (),
    relay_events_scope: str = "readable",
    agent_files: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The complete `buzz-evidence.json` document (schema version 1).

    `identities`: display name -> {role, pubkey} for the trial user and the agents.
    `directory`: rows {identity_id, name, role, pubkey, about} in fixture order.
    `arrival`: event id -> first-seen sequence number from the trial's live subscription.
    `channel_members`: the trial channel's rows {pubkey, role, name} (§8.7).
    `agent_memory`: agent id -> its live memory entries {slug, value, hash, updated_at} (§8.8).
    `trace`, `relay_events`: from `orchestra.evidence.trace.build_trace` (§8.9).
    `relay_events_scope`: `database` when `relay_events` holds every event the relay stored
    during the trial, `readable` when only what the trial's identities could read (§8.9).
    `agent_files`: from `orchestra.evidence.agent_files` (§8.10).
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
        "channel_members": [dict(row) for row in channel_members],
        "agent_memory": {
            agent_id: sorted((dict(row) for row in rows), key=lambda row: str(row["slug"]))
            for agent_id, rows in (agent_memory or {}).items()
        },
        "message_count": len(messages),
        "truncated": truncated,
        "messages": messages,
        "trace": [dict(row) for row in trace],
        "relay_events": [dict(row) for row in relay_events],
        "relay_events_scope": relay_events_scope,
        "agent_files": [dict(row) for row in agent_files],
    }


def transcript_of(evidence: Mapping[str, Any]) -> dict[str, Any]:
    """`transcript.json`: the same normalised messages without the trial context (§8.5)."""
    return {
        "channel_id": evidence["trial"]["channel_id"],
        "message_count": evidence["message_count"],
        "truncated": evidence["truncated"],
        "messages": evidence["messages"],
    }
