"""A trial's channel transcript (buzz-evidence.json, orchestrator.md §8) rendered as a chat.

Every string in the evidence is untrusted (agents wrote the messages, display names and
labels): each one goes through `escape`, and the only markup added is ours. Replies are
indented under the message they answer, `@name` mentions are highlighted and linked to the
identity — green-blue when the message p-tags that identity (a real notification), red when
the name is only text — and the task, scripted, completion and graded messages carry badges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any

MAX_INDENT = 4
CHAT_KIND = 9


@dataclass(frozen=True)
class Identity:
    name: str
    role: str
    pubkey: str
    anchor: str
    source: str  # "trial" or "directory <identity id>": tells namesakes apart


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def identities_of(evidence: dict[str, Any], prefix: str) -> dict[str, Identity]:
    """By pubkey: the trial identities, then the directory (whose name wins, as in §8.2)."""
    rows: list[tuple[str, str, str, str]] = [
        (
            str(name),
            str(_dict(row).get("role") or "unknown"),
            str(_dict(row).get("pubkey")),
            "trial",
        )
        for name, row in _dict(evidence.get("identities")).items()
    ]
    directory = evidence.get("directory")
    rows += [
        (
            str(row.get("name")),
            str(row.get("role") or "unknown"),
            str(row.get("pubkey")),
            f"directory {row.get('identity_id')}",
        )
        for row in (directory if isinstance(directory, list) else [])
        if isinstance(row, dict)
    ]
    by_pubkey: dict[str, Identity] = {}
    for index, (name, role, pubkey, source) in enumerate(rows):
        by_pubkey[pubkey] = Identity(name, role, pubkey, f"{prefix}-id-{index}", source)
    return by_pubkey


def _role_class(role: str) -> str:
    return role if role in ("user", "orchestrator", "worker", "bot") else "unknown"


def _mention_pattern(identities: dict[str, Identity]) -> re.Pattern[str] | None:
    # Longest names first so `@John Vincent Doe` is not taken for `@John`.
    names = sorted({i.name for i in identities.values() if i.name}, key=len, reverse=True)
    if not names:
        return None
    return re.compile("@(" + "|".join(re.escape(name) for name in names) + ")")


def render_content(
    content: str,
    identities: dict[str, Identity],
    mentioned: list[str],
    pattern: re.Pattern[str] | None,
) -> str:
    """The message text, escaped, with `@name` mentions turned into identity links."""
    by_name: dict[str, list[Identity]] = {}
    for identity in identities.values():
        by_name.setdefault(identity.name, []).append(identity)
    parts: list[str] = []
    position = 0
    for match in pattern.finditer(content) if pattern else ():
        # Display names can collide (ambiguous-user-mention has two "Taylor Morgan Lee"):
        # the one this message p-tags is the one it meant.
        namesakes = by_name[match.group(1)]
        identity = next((i for i in namesakes if i.pubkey in mentioned), namesakes[0])
        notified = identity.pubkey in mentioned
        title = "p-tagged: notified" if notified else "text only: no p tag, nobody was notified"
        parts.append(escape(content[position : match.start()]))
        parts.append(
            f'<a class="mention {"notified" if notified else "text-only"}" '
            f'href="#{identity.anchor}" title="{title}">{escape(match.group(0))}</a>'
        )
        position = match.end()
    parts.append(escape(content[position:]))
    return "".join(parts)


def _thread_order(messages: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(index, depth) pairs: each message followed by its replies, recursively, in file order."""
    index_of = {str(m.get("id")): i for i, m in enumerate(messages) if m.get("id")}
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    for i, message in enumerate(messages):
        parent = index_of.get(str(message.get("reply_to_event_id")))
        if parent is None or parent == i:
            roots.append(i)
        else:
            children.setdefault(parent, []).append(i)
    order: list[tuple[int, int]] = []
    seen: set[int] = set()
    # Reply chains that loop back on themselves have no root; they are shown, not dropped.
    for start in [*roots, *range(len(messages))]:
        stack = [(start, 0)]  # iterative: a long reply chain must not hit the recursion limit
        while stack:
            i, depth = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            order.append((i, depth))
            stack.extend((child, depth + 1) for child in reversed(children.get(i, [])))
    return order


def _timestamp(created_at: object) -> str:
    if not isinstance(created_at, int) or isinstance(created_at, bool):
        return "no time"
    try:
        return datetime.fromtimestamp(created_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(created_at)


def graded_ids(details: dict[str, Any] | None) -> dict[str, list[str]]:
    """Message id → the details keys that name it (`selected_message_id`, `answer_message_id`, …)."""
    graded: dict[str, list[str]] = {}
    for key, value in sorted((details or {}).items()):
        if key.endswith("_message_id") and isinstance(value, str) and value:
            graded.setdefault(value, []).append(key)
    return graded


def message_anchor(prefix: str, index: int) -> str:
    return f"{prefix}-m{index}"


def _badges(
    message: dict[str, Any], evidence: dict[str, Any], graded: dict[str, list[str]]
) -> tuple[list[str], list[str]]:
    """(css classes, badge html) for the roles this message plays in the trial."""
    message_id = message.get("id")
    classes: list[str] = []
    badges: list[str] = []
    if message_id and message_id == evidence.get("task_event_id"):
        badges.append('<span class="badge task">task</span>')
    for row in evidence.get("scripted_events") or []:
        if isinstance(row, dict) and message_id and row.get("event_id") == message_id:
            classes.append("scripted")
            badges.append(
                f'<span class="badge scripted">scripted: {escape(str(row.get("label")))}</span>'
            )
    if message_id and message_id == evidence.get("completion_message_id"):
        badges.append('<span class="badge completion">completion</span>')
    keys = graded.get(str(message_id), [])
    if keys:
        classes.append("graded")
        badges.append(f'<span class="badge graded">graded: {escape(", ".join(keys))}</span>')
    return classes, badges


def render_transcript(evidence: dict[str, Any], details: dict[str, Any] | None, prefix: str) -> str:
    """The identities list and the chat of one trial; `prefix` makes anchors page-unique."""
    identities = identities_of(evidence, prefix)
    pattern = _mention_pattern(identities)
    graded = graded_ids(details)
    messages = [m for m in evidence.get("messages") or [] if isinstance(m, dict)]
    index_of = {str(m.get("id")): i for i, m in enumerate(messages) if m.get("id")}
    out = ['<ul class="identities">']
    out += [
        f'<li id="{identity.anchor}"><b>{escape(identity.name)}</b> '
        f'<span class="role-{_role_class(identity.role)}">{escape(identity.role)}</span> '
        f"({escape(identity.source)}) <code>{escape(identity.pubkey[:16])}…</code></li>"
        for identity in identities.values()
    ]
    out.append("</ul>")
    if evidence.get("truncated") is True:
        out.append(
            '<p class="note">Truncated evidence: the channel held 1000 or more messages.</p>'
        )
    if not messages:
        out.append('<p class="empty">No messages in the channel.</p>')
    out.append('<div class="chat">')
    for index, depth in _thread_order(messages):
        message = messages[index]
        pubkey = str(message.get("pubkey") or "")
        author = identities.get(pubkey)
        role = author.role if author else str(message.get("author_role") or "unknown")
        name = author.name if author else str(message.get("author") or "unknown")
        mentioned = _strings(message.get("mentioned_pubkeys"))
        text = message.get("content")
        content = text if isinstance(text, str) else ""
        classes, badges = _badges(message, evidence, graded)
        parent = index_of.get(str(message.get("reply_to_event_id")))
        meta = [
            f'<a class="author" href="#{author.anchor}">{escape(name)}</a>'
            if author
            else f'<span class="author">{escape(name)}</span>',
            f"<span>{escape(role)}</span>",
            f"<span>{_timestamp(message.get('created_at'))}</span>",
            f'<a href="#{message_anchor(prefix, index)}">#{index + 1}</a>',
        ]
        if parent is not None:
            meta.append(f'<a href="#{message_anchor(prefix, parent)}">↳ reply to #{parent + 1}</a>')
        if message.get("kind") != CHAT_KIND:
            meta.append(f"<span>kind {escape(str(message.get('kind')))}</span>")
        notifies = [
            f'<a class="mention notified" href="#{identities[p].anchor}">@{escape(identities[p].name)}</a>'
            if p in identities
            else f"<code>{escape(p[:16])}…</code>"
            for p in dict.fromkeys(mentioned)
        ]
        out.append(
            f'<div class="msg depth-{min(depth, MAX_INDENT)} role-{_role_class(role)} '
            f'{" ".join(classes)}" id="{message_anchor(prefix, index)}" '
            f'data-event-id="{escape(str(message.get("id") or ""))}">'
            f'<div class="meta">{"".join(meta)}{"".join(badges)}</div>'
            f'<div class="content">{render_content(content, identities, mentioned, pattern)}</div>'
            + (f'<div class="notifies">notifies {" ".join(notifies)}</div>' if notifies else "")
            + "</div>"
        )
    out.append("</div>")
    return "\n".join(out)
