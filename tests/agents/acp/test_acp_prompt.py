"""Prompt composition (agent-harness.md §1.6) — exact texts, no I/O."""

from __future__ import annotations

from typing import Any

from orchestra.agents.acp.prompt import (
    ThreadContext,
    TurnInput,
    compose_system_prompt,
    compose_turn_prompt,
    reply_anchor,
    select_thread_messages,
    thread_roots,
)
from orchestra.nostr.bech32 import encode_npub

CHANNEL = "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"
AGENT = "c4" * 32
USER = "77" * 32
OTHER = "aa" * 32
ROOT = "11" * 32
ROOT2 = "22" * 32
T0 = 1795975330  # 2026-11-29T18:02:10Z


def event(
    eid: str,
    content: str,
    *,
    created_at: int = T0,
    author: str = USER,
    tags: list[list[str]] | None = None,
) -> dict[str, Any]:
    return {
        "id": eid,
        "pubkey": author,
        "created_at": created_at,
        "kind": 9,
        "content": content,
        "tags": tags if tags is not None else [["h", CHANNEL], ["p", AGENT]],
        "sig": "00" * 64,
    }


def turn(events: list[dict[str, Any]], threads: list[ThreadContext] | None = None) -> str:
    return compose_turn_prompt(
        TurnInput(
            channel_id=CHANNEL,
            channel_name="reply-to-thread-5f2c9a1b",
            events=events,
            self_pubkey=AGENT,
            names={USER: "user", AGENT: "solo-1"},
            threads=threads or [],
        )
    )


def test_single_top_level_event_matches_the_spec_layout() -> None:
    task = "9a" * 32
    content = "@solo-1 Prepare a projection:\n\n- Month 0 revenue is $120,000.\n"
    text = turn([event(task, content)])
    assert (
        text
        == f"""[Context]
Scope: channel
Channel: reply-to-thread-5f2c9a1b (#{CHANNEL})
Reply instruction: Answer in the thread of this request: run buzz messages send --channel {CHANNEL} --reply-to {task} (content on stdin with --content -). Do not start a new top-level message unless the requester explicitly asks for one.
History: Earlier channel messages are not included; run buzz messages get --channel {CHANNEL} --limit 20 to read them.

[Buzz event: mention]
Event ID: {task}
Channel: reply-to-thread-5f2c9a1b (#{CHANNEL})
Kind: 9
From: user (npub: {encode_npub(USER)}, hex: {USER})
Time: 2026-11-29T18:02:10Z
Reply-to: {task}
Tags: [["h","{CHANNEL}"],["p","{AGENT}"]]
Parsed: parent=none, root=none, mentions=[solo-1 ({AGENT})]
Content:
{content}"""
    )


def test_threaded_event_with_truncated_thread_context() -> None:
    root = event(
        ROOT, "kick-off\nsecond line", created_at=T0 - 100, author=OTHER, tags=[["h", CHANNEL]]
    )
    replies = [
        event(
            f"{i:02d}" * 32,
            f"reply {i}",
            created_at=T0 - 50 + i,
            tags=[["h", CHANNEL], ["e", ROOT, "", "reply"]],
        )
        for i in range(3, 7)
    ]
    trigger = event(
        "ee" * 32,
        "what now?",
        tags=[["h", CHANNEL], ["e", ROOT, "", "reply"], ["p", AGENT], ["auth", "x"]],
    )
    context = select_thread_messages(root, [*replies, trigger], {trigger["id"]}, 3, ROOT)
    assert context.total == 5 and [m["id"] for m in context.messages] == [
        ROOT,
        "05" * 32,
        "06" * 32,
    ]
    text = turn([trigger], [context])
    assert "Scope: thread\n" in text and f"Thread root: {ROOT}\n" in text
    assert f"--reply-to {ROOT} (content on stdin" in text
    assert (
        f"History: Recent thread messages are shown below; run buzz messages thread --channel {CHANNEL} --event {ROOT} for the whole thread."
        in text
    )
    block = f"""[Thread Context: root {ROOT} (3 of 5 messages, truncated)]
1. {encode_npub(OTHER)} ({OTHER}) (2026-11-29T18:00:30Z): kick-off
   second line
2. user ({USER}) (2026-11-29T18:01:25Z): reply 5
3. user ({USER}) (2026-11-29T18:01:26Z): reply 6"""
    assert block in text
    assert f"Reply-to: {ROOT}\n" in text
    assert f"Parsed: parent={ROOT}, root={ROOT}, mentions=[solo-1 ({AGENT})]" in text
    assert '["auth"' not in text  # auth tags are left out of the Tags line


def test_batch_across_two_threads_gets_per_event_anchors() -> None:
    top = event("bb" * 32, "top-level ask", created_at=T0 + 1)
    in_thread = event(
        "aa" * 32,
        "threaded ask",
        created_at=T0 + 1,
        tags=[["h", CHANNEL], ["e", ROOT2, "", "root"], ["e", ROOT, "", "reply"], ["p", AGENT]],
    )
    text = turn([top, in_thread])
    assert "Scope: channel" in text
    assert (
        "Reply instruction: This prompt holds requests from 2 different threads. Answer each "
        "request in its own thread, using --reply-to with the Reply-to value shown in that "
        "request's event block; never combine answers for different threads in one message."
    ) in text
    assert (
        "[Buzz events — 2 events]\n--- Event 1 of 2 (mention) ---\nEvent ID: " + "aa" * 32 in text
    )
    assert "--- Event 2 of 2 (mention) ---\nEvent ID: " + "bb" * 32 in text
    assert f"Reply-to: {ROOT2}" in text and f"Reply-to: {'bb' * 32}" in text
    assert f"parent={ROOT}, root={ROOT2}" in text


def test_batch_in_one_thread_and_message_tag() -> None:
    a = event("01" * 32, "one", tags=[["h", CHANNEL], ["e", ROOT, "", "reply"]])
    b = event("02" * 32, "two", tags=[["h", CHANNEL], ["e", ROOT, "", "reply"], ["p", AGENT]])
    text = turn([b, a])
    assert "Scope: thread" in text and text.count(f"--reply-to {ROOT}") == 1
    assert "--- Event 1 of 2 (message) ---\nEvent ID: " + "01" * 32 in text


def test_a_root_only_event_is_a_direct_reply_to_its_root() -> None:
    """The NIP-10 form (protocol.md §9.6) reads like the Buzz reply-only form (§1.6.2)."""
    nip10 = event("04" * 32, "ask", tags=[["h", CHANNEL], ["e", ROOT, "", "root"], ["p", AGENT]])
    text = turn([nip10])
    assert "Scope: thread\n" in text and f"Thread root: {ROOT}\n" in text
    assert f"Reply-to: {ROOT}\n" in text
    assert f"Parsed: parent={ROOT}, root={ROOT}, mentions=" in text


def test_profile_less_author_is_shown_by_npub() -> None:
    stranger = "dd" * 32
    text = turn([event("03" * 32, "hi", author=stranger)])
    assert f"From: {encode_npub(stranger)} (npub: {encode_npub(stranger)}, hex: {stranger})" in text


def test_reply_anchor_rules() -> None:
    assert reply_anchor(event("04" * 32, "x")) == "04" * 32
    assert reply_anchor(event("05" * 32, "x", tags=[["e", ROOT, "", "reply"]])) == ROOT
    assert reply_anchor(event("06" * 32, "x", tags=[["e", ROOT, "", "root"]])) == ROOT
    assert (
        reply_anchor(
            event("07" * 32, "x", tags=[["e", ROOT2, "", "root"], ["e", ROOT, "", "reply"]])
        )
        == ROOT2
    )
    many = [
        event(f"{i:02d}" * 32, "x", tags=[["e", f"{i + 50:02d}" * 32, "", "reply"]])
        for i in range(5)
    ]
    assert len(thread_roots(many)) == 3


def test_system_prompt_sections() -> None:
    assert compose_system_prompt("base  \n", "persona\n\n", "remember") == (
        "[Base]\nbase\n\n[System]\npersona\n\n[Agent Memory — core]\nremember"
    )
    assert compose_system_prompt("", "persona", None) == "[System]\npersona"
    assert compose_system_prompt("base", "  \n", "") == "[Base]\nbase"
    assert compose_system_prompt("", "", None) == ""
