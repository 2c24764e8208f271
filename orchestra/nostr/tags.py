"""Reading and writing an event's tag list: names, values, channels, mentions and threads.

Pure functions over `Sequence[Sequence[str]]` (an `Event`'s tuples or a decoded event's lists);
`clean` first turns an untrusted decoded `tags` value into that shape.

The thread rule (protocol.md §9.6, buzz-cli.md §5.1.3, agent-harness.md §1.6.2) lives here and
nowhere else: the thread **root** of an event is the value of its first `e` tag marked `root`,
else of its first `e` tag marked `reply` (a reply-only event is a direct reply to its root), else
none (the event is top-level); its **parent** is the reply-marked value, else the root-marked one.
Unmarked `e` tags are plain references. An empty marked value counts as absent.
"""

from collections.abc import Container, Mapping, Sequence
from typing import Any

from orchestra.nostr.kinds import CHANNEL_STATE_KINDS

TagList = Sequence[Sequence[str]]

ROOT, REPLY = "root", "reply"
_THREAD_MARKERS = (ROOT, REPLY)


def clean(raw_tags: object) -> list[list[str]]:
    """Tags that are non-empty lists of strings, in original order (orchestrator.md §8.2);
    anything else, including a `tags` value that is not a list, is dropped."""
    if not isinstance(raw_tags, list):
        return []
    return [
        list(tag)
        for tag in raw_tags
        if isinstance(tag, list) and tag and all(isinstance(item, str) for item in tag)
    ]


def of_event(event: Mapping[str, Any]) -> list[list[str]]:
    """The cleaned tags of a decoded event object."""
    return clean(event.get("tags"))


#: The `buzz` tag value that marks a message the harness posted (buzz-acp's failure notice):
#: it is no one's answer, so the evidence export leaves it out and no verifier reads it.
HARNESS_NOTICE = "turn-failed"


def is_harness_notice(tags: TagList) -> bool:
    return has_value(tags, "buzz", {HARNESS_NOTICE})


def has(tags: TagList, name: str) -> bool:
    """Some tag is called `name` (with or without values)."""
    return any(tag[0] == name for tag in tags)


def has_value(tags: TagList, name: str, accepted: Container[str]) -> bool:
    """Some tag called `name` has its first value in `accepted` (the `#x` filter rule, §5.2)."""
    return any(len(tag) >= 2 and tag[0] == name and tag[1] in accepted for tag in tags)


def named(tags: TagList, name: str) -> list[Sequence[str]]:
    """Every tag called `name`, with or without values, in tag order."""
    return [tag for tag in tags if tag[0] == name]


def values(tags: TagList, name: str) -> list[str]:
    """First values of every tag called `name`, in tag order (duplicates kept)."""
    return [tag[1] for tag in named(tags, name) if len(tag) >= 2]


def without(tags: TagList, name: str) -> list[Sequence[str]]:
    """The tags not called `name`, in tag order."""
    return [tag for tag in tags if tag[0] != name]


def first_value(tags: TagList, name: str) -> str | None:
    """The value of the first tag called `name`; None when there is none or it has no value
    (protocol.md §6 reads `d` this way, orchestrator.md §8.2 `h`)."""
    first = next(iter(named(tags, name)), None)
    return first[1] if first is not None and len(first) >= 2 else None


def sole_value(tags: TagList, name: str) -> str | None:
    """The value of the only tag called `name`; None when it is missing, repeated or empty."""
    only = named(tags, name)
    return only[0][1] if len(only) == 1 and len(only[0]) >= 2 else None


def channel_id(tags: TagList) -> str | None:
    """The channel an event belongs to: the value of its first `h` tag (orchestrator.md §8.2;
    the relay accepts channel events only with exactly one)."""
    return first_value(tags, "h")


def access_channel(kind: object, tags: TagList) -> str | None:
    """The channel an event belongs to for access control (protocol.md §10): its `h` value,
    or its `d` value for the relay-signed channel state kinds."""
    if kind in CHANNEL_STATE_KINDS:
        return first_value(tags, "d")
    return channel_id(tags)


def mentions(tags: TagList) -> list[str]:
    """Values of all `p` tags in tag order, duplicates kept: who was notified (§9.6)."""
    return values(tags, "p")


def d_value(tags: TagList) -> str:
    """The addressable-event key: the value of the first `d` tag, `""` without one (§6)."""
    return first_value(tags, "d") or ""


def marked_reference(tags: TagList, marker: str) -> str | None:
    """The value of the first `e` tag whose fourth element is `marker` (NIP-10)."""
    return next(
        (tag[1] for tag in tags if len(tag) >= 4 and tag[0] == "e" and tag[3] == marker), None
    )


def thread_references(tags: TagList) -> tuple[tuple[str, str], ...]:
    """(marker, event id) of every `root`/`reply`-marked `e` tag, in tag order: the references
    the relay checks exist in the same channel (§9.6)."""
    return tuple(
        (tag[3], tag[1])
        for tag in tags
        if len(tag) >= 4 and tag[0] == "e" and tag[3] in _THREAD_MARKERS
    )


def thread_root(tags: TagList) -> str | None:
    """The thread root by the module's rule; None for a top-level event."""
    return marked_reference(tags, ROOT) or marked_reference(tags, REPLY) or None


def thread_parent(tags: TagList) -> str | None:
    """The event replied to by the module's rule; None for a top-level event."""
    return marked_reference(tags, REPLY) or marked_reference(tags, ROOT) or None


def reply_tags(parent_id: str, root_id: str) -> list[list[str]]:
    """The `e` tags of a reply to `parent_id` in the thread rooted at `root_id`: a flat
    `reply` tag when the parent is the root, else `root` then `reply` (buzz-cli.md §5.1.3)."""
    if parent_id == root_id:
        return [["e", parent_id, "", REPLY]]
    return [["e", root_id, "", ROOT], ["e", parent_id, "", REPLY]]
