"""Read the trial context back out of a turn prompt (agent-harness.md §5.2).

Diagnostic only: the oracle answers from its registration, and compares these values
to it. Only header lines are searched (within an event block, the lines before its
`Content:` line), so message content can never spoof them.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

CHANNEL_RE = re.compile(r"^Channel: .* \(#([0-9a-f-]{36})\)$")
REPLY_TO_RE = re.compile(r"^Reply-to: ([0-9a-f]{64})$")
REPLY_INSTRUCTION_ANCHOR_RE = re.compile(r"--reply-to ([0-9a-f]{64})")
FROM_RE = re.compile(r"^From: (.*) \(npub: (npub1[02-9ac-hj-np-z]+), hex: ([0-9a-f]{64})\)$")


class ParsedContext(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    channel_id: str | None = None
    reply_to: str | None = None
    requester_pubkey: str | None = None
    requester_name: str | None = None
    #: the author pubkey of every event block of the turn, in order (the team protocol's
    #: "who woke me", orchestrator.md §4.5 "Teams")
    senders: tuple[str, ...] = ()


def message_text(content: Any) -> str:
    """A chat message `content`: a string or a list of `{type: "text", text}` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def turn_user_message(messages: Any) -> str | None:
    """The last `role: "user"` message whose text contains `[Context]`."""
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            text = message_text(message.get("content"))
            if "[Context]" in text:
                return text
    return None


def header_lines(text: str) -> list[str]:
    """Every line outside event contents: a `Content:` line hides the rest of its block."""
    lines: list[str] = []
    in_content = False
    for line in text.split("\n"):
        if line.startswith(("[Buzz event", "--- Event ")):
            in_content = False
        if not in_content:
            lines.append(line)
        if line == "Content:":
            in_content = True
    return lines


def parse_context(text: str) -> ParsedContext:
    lines = header_lines(text)
    channel_id = _first_group(CHANNEL_RE, lines, 1)
    first_block = _first_event_block(lines)
    reply_to = _first_group(REPLY_TO_RE, first_block, 1)
    if reply_to is None:
        instruction = next((ln for ln in lines if ln.startswith("Reply instruction: ")), "")
        found = REPLY_INSTRUCTION_ANCHOR_RE.search(instruction)
        reply_to = found.group(1) if found else None
    sender = next((m for m in map(FROM_RE.match, first_block) if m), None)
    return ParsedContext(
        channel_id=channel_id,
        reply_to=reply_to,
        requester_pubkey=sender.group(3) if sender else None,
        requester_name=sender.group(1) if sender else None,
        senders=tuple(m.group(3) for m in map(FROM_RE.match, lines) if m),
    )


def _first_event_block(lines: list[str]) -> list[str]:
    """Header lines of the first event block (from its `Event ID:` line to its `Content:`)."""
    start = next((i for i, ln in enumerate(lines) if ln.startswith("Event ID: ")), None)
    if start is None:
        return []
    block: list[str] = []
    for line in lines[start:]:
        if line == "Content:":
            break
        block.append(line)
    return block


def _first_group(pattern: re.Pattern[str], lines: list[str], group: int) -> str | None:
    for line in lines:
        found = pattern.match(line)
        if found:
            return found.group(group)
    return None
