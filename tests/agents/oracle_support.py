"""The oracle's view of one trial, shared by the oracle tests: the ids a task prompt carries
and the prompt buzz-acp composes for them (agent-harness.md §1.6.3)."""

CHANNEL = "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"
TASK_EVENT = "9a" * 32
REQUESTER = "77" * 32
TASK_PROMPT = f"""[Context]
Scope: channel
Channel: task-room (#{CHANNEL})
Reply instruction: Answer in the thread of this request: run buzz messages send \
--channel {CHANNEL} --reply-to {TASK_EVENT} (content on stdin with --content -).
History: Earlier channel messages are not included.

[Buzz event: mention]
Event ID: {TASK_EVENT}
Channel: task-room (#{CHANNEL})
Kind: 9
From: Trial User (npub: npub1xyz, hex: {REQUESTER})
Time: 2026-11-29T18:02:10Z
Reply-to: {TASK_EVENT}
Tags: [["h","{CHANNEL}"]]
Parsed: parent=none, root=none, mentions=[]
Content:
@solo-1 do it"""
