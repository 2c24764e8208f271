"""Tag-list helpers and the one thread rule (protocol.md §9.6, buzz-cli.md §5.1.3,
agent-harness.md §1.6.2, orchestrator.md §8.2)."""

import pytest

from orchestra.nostr import tags

ROOT, PARENT, OTHER = "11" * 32, "22" * 32, "33" * 32
CHANNEL = "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"


def test_clean_keeps_non_empty_string_lists_in_order() -> None:
    raw = [["h", CHANNEL], [], ["p"], ["x", 1], "e", ("t", "u"), ["p", "a", "b"]]
    assert tags.clean(raw) == [["h", CHANNEL], ["p"], ["p", "a", "b"]]
    assert tags.clean("tags") == [] and tags.clean(None) == []
    assert tags.of_event({"tags": [["d", "x"], [3]]}) == [["d", "x"]]
    assert tags.of_event({}) == []


def test_names_and_values() -> None:
    event_tags = [["p", "a"], ["private"], ["p"], ["p", "b", "bot"], ["archived", "true"]]
    assert tags.values(event_tags, "p") == ["a", "b"]
    assert tags.named(event_tags, "p") == [["p", "a"], ["p"], ["p", "b", "bot"]]
    assert tags.mentions(event_tags) == ["a", "b"]
    assert tags.has(event_tags, "private") and not tags.has(event_tags, "public")
    assert tags.has_value(event_tags, "archived", ("true",))
    assert not tags.has_value(event_tags, "archived", ("false",))
    assert not tags.has_value(event_tags, "private", ("",))  # a valueless tag has no value
    assert tags.without(event_tags, "p") == [["private"], ["archived", "true"]]


def test_mentions_keep_duplicates_in_tag_order() -> None:
    assert tags.mentions([["p", "b"], ["h", CHANNEL], ["p", "a"], ["p", "b"]]) == ["b", "a", "b"]


@pytest.mark.parametrize(
    ("event_tags", "expected"),
    [
        ([["d", "x"], ["d", "y"]], "x"),
        ([["d"], ["d", "y"]], None),  # the first `d` tag decides, even without a value
        ([["h", CHANNEL]], None),
        ([], None),
    ],
)
def test_first_value_is_the_value_of_the_first_tag(event_tags, expected) -> None:
    assert tags.first_value(event_tags, "d") == expected


def test_d_value_and_channel_id() -> None:
    assert tags.d_value([["d"], ["d", "y"]]) == ""  # protocol.md §6: no value means ""
    assert tags.d_value([["x", "1"]]) == ""
    assert tags.d_value([["d", "slug"]]) == "slug"
    assert tags.channel_id([["p", "a"], ["h", CHANNEL], ["h", "other"]]) == CHANNEL
    assert tags.channel_id([["h"], ["h", CHANNEL]]) is None


@pytest.mark.parametrize(
    ("event_tags", "expected"),
    [
        ([["relay", "ws://x"]], "ws://x"),
        ([["relay", "ws://x"], ["relay", "ws://y"]], None),
        ([["relay"]], None),
        ([["relay"], ["relay", "ws://x"]], None),
        ([], None),
    ],
)
def test_sole_value(event_tags, expected) -> None:
    assert tags.sole_value(event_tags, "relay") == expected


# ---- the thread rule ---------------------------------------------------------------------


def e(event_id: str, marker: str | None = None) -> list[str]:
    return ["e", event_id] if marker is None else ["e", event_id, "", marker]


@pytest.mark.parametrize(
    ("event_tags", "root", "parent", "reply_marker"),
    [
        # Top-level: no marked reference; unmarked `e` tags are plain references.
        ([["h", CHANNEL]], None, None, None),
        ([e(OTHER), ["e", OTHER, ""]], None, None, None),
        # The Buzz form: reply marker only, the referenced event is the root.
        ([e(ROOT, "reply")], ROOT, ROOT, ROOT),
        # A reply to a reply: root names the root, reply the parent (either order).
        ([e(ROOT, "root"), e(PARENT, "reply")], ROOT, PARENT, PARENT),
        ([e(PARENT, "reply"), e(ROOT, "root")], ROOT, PARENT, PARENT),
        # The NIP-10 form: root only, a direct reply to the root, but not a `reply` marker.
        ([e(ROOT, "root")], ROOT, ROOT, None),
        # Markers other than root/reply and unmarked references do not count.
        ([e(OTHER), e(OTHER, "mention"), e(ROOT, "reply")], ROOT, ROOT, ROOT),
        # Several of one marker (other kinds than 9 are not validated): the first counts.
        ([e(ROOT, "root"), e(OTHER, "root"), e(PARENT, "reply")], ROOT, PARENT, PARENT),
        # An empty marked value counts as absent for the rule.
        ([["e", "", "", "root"], e(PARENT, "reply")], PARENT, PARENT, PARENT),
        ([["e", "", "", "reply"]], None, None, ""),
    ],
)
def test_thread_rule(event_tags, root, parent, reply_marker) -> None:
    assert tags.thread_root(event_tags) == root
    assert tags.thread_parent(event_tags) == parent
    assert tags.marked_reference(event_tags, tags.REPLY) == reply_marker


def test_thread_references_are_every_root_and_reply_marker_in_order() -> None:
    event_tags = [e(PARENT, "reply"), e(OTHER), e(ROOT, "root"), e(OTHER, "mention")]
    assert tags.thread_references(event_tags) == (("reply", PARENT), ("root", ROOT))
    assert tags.thread_references([e(OTHER)]) == ()


def test_reply_tags_are_flat_for_the_root_and_nested_otherwise() -> None:
    assert tags.reply_tags(ROOT, ROOT) == [["e", ROOT, "", "reply"]]
    assert tags.reply_tags(PARENT, ROOT) == [["e", ROOT, "", "root"], ["e", PARENT, "", "reply"]]


@pytest.mark.parametrize(
    "parent_tags", [[], [e(ROOT, "reply")], [e(ROOT, "root"), e(OTHER, "reply")]]
)
def test_replying_keeps_the_parents_root(parent_tags) -> None:
    """buzz-cli.md §5.1.3: a reply's root is its parent's root (or the parent when top-level),
    and reading the reply back with the rule gives that root and parent again."""
    root = tags.thread_root(parent_tags) or PARENT
    reply = tags.reply_tags(PARENT, root)
    assert tags.thread_root(reply) == root
    assert tags.thread_parent(reply) == PARENT
    assert tags.marked_reference(reply, tags.REPLY) == PARENT
