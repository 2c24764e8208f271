"""Prompt composition (agent-harness.md §1.6): the system prompt and the per-turn message.

Pure functions: the caller fetches profiles, channel names and thread history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestra.agents.acp.eventlog import rfc3339_s
from orchestra.nostr import tags
from orchestra.nostr.bech32 import encode_npub

MAX_THREAD_ROOTS = 3


def compose_system_prompt(base: str, persona: str, memory: str | None) -> str:
    sections = [("[Base]", base), ("[System]", persona), ("[Agent Memory — core]", memory or "")]
    return "\n\n".join(f"{header}\n{text.rstrip()}" for header, text in sections if text.strip())


def parent_and_root(event: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """§1.6.2: the event's parent and thread root by the one thread rule (`nostr.tags`)."""
    event_tags = tags.of_event(event)
    return tags.thread_parent(event_tags), tags.thread_root(event_tags)


def reply_anchor(event: Mapping[str, Any]) -> str:
    """The thread root, or the event's own id for a top-level event (threads stay flat)."""
    return parent_and_root(event)[1] or str(event["id"])


def sort_key(event: Mapping[str, Any]) -> tuple[int, str]:
    return (int(event.get("created_at", 0)), str(event.get("id", "")))


@dataclass(frozen=True)
class ThreadContext:
    root: str
    messages: Sequence[Mapping[str, Any]]  # root first, then the kept replies, oldest first
    total: int


@dataclass(frozen=True)
class TurnInput:
    channel_id: str
    channel_name: str
    events: Sequence[Mapping[str, Any]]
    self_pubkey: str
    names: Mapping[str, str]  # pubkey -> display name; missing ⇒ npub
    threads: Sequence[ThreadContext] = ()


def display_name(names: Mapping[str, str], pubkey: str) -> str:
    return names.get(pubkey) or encode_npub(pubkey)


def thread_roots(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Distinct non-empty roots in order of first appearance, at most three."""
    roots: list[str] = []
    for event in events:
        root = parent_and_root(event)[1]
        if root and root not in roots:
            roots.append(root)
    return roots[:MAX_THREAD_ROOTS]


def compose_turn_prompt(turn: TurnInput) -> str:
    events = sorted(turn.events, key=sort_key)
    blocks = [context_block(turn, events)]
    blocks += [thread_block(thread, turn.names) for thread in turn.threads]
    if len(events) == 1:
        blocks.append(
            f"[Buzz event: {event_tag(events[0], turn.self_pubkey)}]\n"
            + event_block(events[0], turn)
        )
    else:
        lines = [f"[Buzz events — {len(events)} events]"]
        for i, event in enumerate(events, 1):
            lines.append(
                f"--- Event {i} of {len(events)} ({event_tag(event, turn.self_pubkey)}) ---\n"
                + event_block(event, turn)
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def event_tag(event: Mapping[str, Any], self_pubkey: str) -> str:
    return "mention" if self_pubkey in tags.mentions(tags.of_event(event)) else "message"


def context_block(turn: TurnInput, events: Sequence[Mapping[str, Any]]) -> str:
    channel = turn.channel_id
    roots = {parent_and_root(event)[1] for event in events}
    common_root = next(iter(roots)) if len(roots) == 1 else None
    lines = [
        "[Context]",
        f"Scope: {'thread' if common_root else 'channel'}",
        f"Channel: {turn.channel_name} (#{channel})",
    ]
    if common_root:
        lines.append(f"Thread root: {common_root}")
    anchors = list(dict.fromkeys(reply_anchor(event) for event in events))
    if len(anchors) == 1:
        lines.append(
            "Reply instruction: Answer in the thread of this request: run buzz messages send "
            f"--channel {channel} --reply-to {anchors[0]} (content on stdin with --content -). "
            "Do not start a new top-level message unless the requester explicitly asks for one."
        )
    else:
        lines.append(
            f"Reply instruction: This prompt holds requests from {len(anchors)} different threads. "
            "Answer each request in its own thread, using --reply-to with the Reply-to value shown "
            "in that request's event block; never combine answers for different threads in one "
            "message."
        )
    if common_root:
        lines.append(
            "History: Recent thread messages are shown below; run buzz messages thread "
            f"--channel {channel} --event {common_root} for the whole thread."
        )
    else:
        lines.append(
            "History: Earlier channel messages are not included; run buzz messages get "
            f"--channel {channel} --limit 20 to read them."
        )
    return "\n".join(lines)


def event_block(event: Mapping[str, Any], turn: TurnInput) -> str:
    author = str(event["pubkey"])
    parent, root = parent_and_root(event)
    event_tags = tags.of_event(event)
    shown_tags = tags.without(event_tags, "auth")
    mentions = ", ".join(
        f"{display_name(turn.names, pk)} ({pk})" for pk in tags.mentions(event_tags)
    )
    channel = f"{turn.channel_name} (#{turn.channel_id})"
    return "\n".join(
        [
            f"Event ID: {event['id']}",
            f"Channel: {channel}",
            f"Kind: {event['kind']}",
            f"From: {display_name(turn.names, author)} (npub: {encode_npub(author)}, hex: {author})",
            f"Time: {rfc3339_s(int(event['created_at']))}",
            f"Reply-to: {reply_anchor(event)}",
            f"Tags: {json.dumps(shown_tags, separators=(',', ':'), ensure_ascii=False)}",
            f"Parsed: parent={parent or 'none'}, root={root or 'none'}, mentions=[{mentions}]",
            "Content:",
            str(event.get("content", "")),
        ]
    )


def thread_block(thread: ThreadContext, names: Mapping[str, str]) -> str:
    kept = len(thread.messages)
    truncated = ", truncated" if kept < thread.total else ""
    lines = [f"[Thread Context: root {thread.root} ({kept} of {thread.total} messages{truncated})]"]
    for i, message in enumerate(thread.messages, 1):
        author = str(message["pubkey"])
        first, *rest = str(message.get("content", "")).split("\n")
        lines.append(
            f"{i}. {display_name(names, author)} ({author}) "
            f"({rfc3339_s(int(message['created_at']))}): {first}"
        )
        lines += [f"   {line}" for line in rest]
    return "\n".join(lines)


def select_thread_messages(
    root_event: Mapping[str, Any] | None,
    replies: Sequence[Mapping[str, Any]],
    exclude_ids: set[str],
    limit: int,
    root: str,
) -> ThreadContext:
    """Keep the root plus the most recent (limit − 1) replies; `total` counts before cutting."""
    others = sorted((r for r in replies if r.get("id") not in exclude_ids), key=sort_key)
    head = [root_event] if root_event is not None and root not in exclude_ids else []
    total = len(head) + len(others)
    room = max(limit - len(head), 0)
    kept_replies = others[len(others) - room :] if room else []
    return ThreadContext(root=root, messages=[*head, *kept_replies], total=total)
