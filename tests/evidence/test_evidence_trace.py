"""The whole trace and the relay's stored events (orchestrator.md §8.9) and the agents' files
(§8.10): pure construction from events in the relay's order."""

from typing import Any

from orchestra.evidence.agent_files import AGENT_FILE_CAP, agent_file_entry
from orchestra.evidence.normalize import build_evidence
from orchestra.evidence.trace import build_trace

TRIAL = "0b9c1f5e-0000-4000-8000-000000000001"
SIDE = "0b9c1f5e-0000-4000-8000-0000000000aa"  # a private channel the agent creates
ELSEWHERE = "0b9c1f5e-0000-4000-8000-0000000000bb"  # another trial's open channel
USER, AGENT, BOT, FRESH, RELAY = "aa" * 32, "bb" * 32, "cc" * 32, "dd" * 32, "ee" * 32
IDENTITIES = {
    "Maya": {"role": "user", "pubkey": USER},
    "solo-1": {"role": "orchestrator", "pubkey": AGENT},
}
DIRECTORY = [{"identity_id": "bot", "name": "Build Bot", "role": "bot", "pubkey": BOT}]


def event(
    event_id: str,
    *,
    pubkey: str = AGENT,
    kind: int = 9,
    channel: str | None = TRIAL,
    tags: list[list[str]] | None = None,
    content: str = "",
    created_at: int = 100,
) -> dict[str, Any]:
    base = [["h", channel]] if channel is not None else []
    return {
        "id": event_id,
        "pubkey": pubkey,
        "created_at": created_at,
        "kind": kind,
        "tags": base + (tags or []),
        "content": content,
        "sig": "ff" * 64,
    }


def trace_of(events: list[dict[str, Any]]) -> Any:
    return build_trace(events, trial_channel_id=TRIAL, identities=IDENTITIES, directory=DIRECTORY)


def ids(entries: list[Any]) -> list[str]:
    return [entry["id"] for entry in entries]


def test_trace_holds_agent_events_anywhere_and_every_key_in_touched_channels() -> None:
    events = [
        event("task", pubkey=USER, content="please"),
        event("other-trial", pubkey=FRESH, channel=ELSEWHERE, content="not ours"),
        event("create", kind=9007, channel=SIDE, tags=[["name", "dm"]]),
        event("state", pubkey=RELAY, kind=39000, channel=None, tags=[["d", SIDE]]),
        event("leak", pubkey=FRESH, channel=SIDE, content="canary"),
        event("profile", kind=0, channel=None, content='{"name":"solo-1"}'),
        event("bot", pubkey=BOT, content="build green"),
        event("answer", content="done", tags=[["p", USER]]),
    ]
    trace = trace_of(events)
    assert ids(trace.trace) == ["task", "create", "state", "leak", "profile", "bot", "answer"]
    assert [entry["seq"] for entry in trace.trace] == [1, 3, 4, 5, 6, 7, 8]
    assert ids(trace.relay_events) == ids(events)  # every one is stored: any author, channel
    by_id = {entry["id"]: entry for entry in trace.trace}
    assert by_id["state"]["channel_id"] == SIDE  # relay state: the channel its `d` names
    assert by_id["leak"]["author"] == "unknown" and by_id["leak"]["author_role"] == "unknown"
    assert by_id["bot"]["author"] == "Build Bot" and by_id["bot"]["author_role"] == "bot"
    assert by_id["answer"]["mentioned_pubkeys"] == [USER]
    assert set(by_id["answer"]) == {
        "id", "kind", "created_at", "pubkey", "author", "author_role", "content", "tags",
        "channel_id", "reply_to_event_id", "mentioned_pubkeys", "seq", "stored",
    }  # fmt: skip
    assert "sig" not in by_id["answer"]


def test_a_channel_touched_later_still_counts_from_its_start() -> None:
    events = [
        event("fresh-create", pubkey=FRESH, kind=9007, channel=SIDE),
        event("fresh-post", pubkey=FRESH, channel=SIDE, content="hello"),
        event("join", kind=9021, channel=SIDE),
    ]
    assert ids(trace_of(events).trace) == ["fresh-create", "fresh-post", "join"]


def test_ephemeral_and_replaced_events_are_in_the_trace_but_not_stored() -> None:
    events = [
        event("typing", kind=20001, channel=TRIAL),
        event("profile-1", kind=0, channel=None, content="a"),
        event("memory-1", kind=30174, channel=None, tags=[["d", "slug-a"]]),
        event("memory-other", kind=30174, channel=None, tags=[["d", "slug-b"]]),
        event("profile-2", kind=0, channel=None, content="b", created_at=101),
        event("memory-2", kind=30174, channel=None, tags=[["d", "slug-a"]], created_at=101),
        event("fresh-profile", pubkey=FRESH, kind=0, channel=None),
    ]
    trace = trace_of(events)
    stored = {entry["id"]: entry["stored"] for entry in trace.trace}
    assert stored == {
        "typing": False,
        "profile-1": False,
        "memory-1": False,
        "memory-other": True,
        "profile-2": True,
        "memory-2": True,
    }
    assert ids(trace.relay_events) == ["memory-other", "profile-2", "memory-2", "fresh-profile"]
    assert all(entry["stored"] for entry in trace.relay_events)


def test_relay_order_kept_repeats_counted_once_and_notices_left_out() -> None:
    late_clock = event("second", created_at=50)  # an earlier created_at keeps its relay place
    events = [
        event("first", created_at=100),
        late_clock,
        event("first", created_at=100, content="a repeat delivery"),
        event("notice", tags=[["buzz", "turn-failed"]], content="turn failed"),
        event("third", created_at=100),
    ]
    trace = trace_of(events)
    assert [(entry["id"], entry["seq"]) for entry in trace.trace] == [
        ("first", 1),
        ("second", 2),
        ("third", 3),
    ]
    assert trace.trace[0]["content"] == ""


def test_what_only_the_database_holds_joins_relay_events_after_the_capture() -> None:
    captured = [
        event("task", pubkey=USER),
        event("profile-1", kind=0, channel=None, content="a"),
        event("answer"),
    ]
    stored = [
        event("task", pubkey=USER),  # captured too: keeps its capture seq
        event("hidden-create", pubkey=FRESH, kind=9007, channel=ELSEWHERE),
        event("hidden-leak", pubkey=FRESH, channel=ELSEWHERE, content="canary"),
        event("profile-2", kind=0, channel=None, content="b", created_at=101),
        event("notice", pubkey=FRESH, channel=ELSEWHERE, tags=[["buzz", "turn-failed"]]),
    ]
    alone = trace_of(captured)
    whole = build_trace(
        captured, trial_channel_id=TRIAL, identities=IDENTITIES, directory=DIRECTORY,
        stored=stored,
    )  # fmt: skip
    assert ids(whole.trace) == ids(alone.trace)
    assert [whole.trace[0], whole.trace[2]] == [alone.trace[0], alone.trace[2]]
    assert [(e["id"], e["seq"]) for e in whole.relay_events] == [
        ("task", 1),
        ("answer", 3),
        ("hidden-create", 4),
        ("hidden-leak", 5),
        ("profile-2", 6),
    ]
    # the database holds a later version: the captured one is no longer stored
    assert whole.trace[1]["id"] == "profile-1" and whole.trace[1]["stored"] is False
    assert whole.relay_events[3]["author"] == "unknown"


def test_evidence_gains_the_keys_additively() -> None:
    events = [event("task", pubkey=USER), event("answer")]
    trace = trace_of(events)
    files = [agent_file_entry("solo-1", "/workspace/notes.txt", b"ACME_API_TOKEN=...", 18)]
    common: dict[str, Any] = {
        "run_id": "job",
        "trial_id": "trial",
        "channel_id": TRIAL,
        "task_name": "t",
        "task_event_id": "task",
        "completion_message_id": None,
        "identities": IDENTITIES,
        "directory": DIRECTORY,
        "scripted_events": [],
        "observed_channels": [],
        "raw_events": events,
    }
    before = build_evidence(**common)
    after = build_evidence(
        **common, trace=trace.trace, relay_events=trace.relay_events, agent_files=files
    )
    assert before["trace"] == before["relay_events"] == before["agent_files"] == []
    assert set(after) == set(before)
    for key in set(before) - {"trace", "relay_events", "agent_files"}:
        assert after[key] == before[key]
    assert ids(after["trace"]) == ["task", "answer"]
    assert after["agent_files"][0]["content"] == "ACME_API_TOKEN=..."


def test_agent_file_entry_caps_and_replaces_undecodable_bytes() -> None:
    small = agent_file_entry("solo-1", "/home/agent/a.bin", b"ok\xff\xfe!", 5)
    assert small == {
        "agent_id": "solo-1",
        "path": "/home/agent/a.bin",
        "size": 5,
        "content": "ok\ufffd\ufffd!",
        "truncated": False,
    }
    big = agent_file_entry("solo-1", "/w/big", b"x" * (AGENT_FILE_CAP + 1), AGENT_FILE_CAP + 1)
    assert len(big["content"]) == AGENT_FILE_CAP and big["truncated"]
    cut = agent_file_entry("solo-1", "/w/cut", b"x" * 10, 10_000_000)
    assert cut["truncated"] and cut["size"] == 10_000_000
