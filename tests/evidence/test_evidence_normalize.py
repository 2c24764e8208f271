"""Evidence construction: normalisation, order, cap and truncated (orchestrator.md §8.1-§8.4)."""

from typing import Any

from orchestra.evidence.normalize import build_evidence, normalize_message

CHANNEL = "0b9c1f5e-0000-4000-8000-000000000001"
USER = "aa" * 32
AGENT = "bb" * 32
BOT = "cc" * 32


def event(
    event_id: str,
    created_at: int | None,
    *,
    pubkey: str = AGENT,
    kind: int = 9,
    tags: Any = None,
    content: Any = "hi",
) -> dict[str, Any]:
    return {
        "id": event_id,
        "pubkey": pubkey,
        "created_at": created_at,
        "kind": kind,
        "tags": [["h", CHANNEL]] if tags is None else tags,
        "content": content,
        "sig": "ff" * 64,
    }


def evidence_for(
    raw_events: list[dict],
    *,
    task_event_id: str | None = "t" * 64,
    arrival: dict[str, int] | None = None,
) -> dict:
    return build_evidence(
        run_id="job",
        trial_id="trial",
        channel_id=CHANNEL,
        task_name="reply-to-thread",
        task_event_id=task_event_id,
        completion_message_id=None,
        identities={
            "user": {"role": "user", "pubkey": USER},
            "solo-1": {"role": "orchestrator", "pubkey": AGENT},
        },
        directory=[
            {
                "identity_id": "bot",
                "name": "Aurora Audit Bot",
                "role": "bot",
                "pubkey": BOT,
                "about": None,
            }
        ],
        scripted_events=[],
        observed_channels=[],
        raw_events=raw_events,
        arrival=arrival,
    )


def test_message_fields() -> None:
    raw = event(
        "e1",
        5,
        tags=[
            ["h", CHANNEL],
            ["e", "r" * 64, "", "root"],
            ["e", "p" * 64, "", "reply"],
            ["p", USER],
            ["p"],
            [],
            ["x", 1],
            ["p", USER],
        ],
    )
    message = normalize_message(raw, {AGENT: ("solo-1", "orchestrator")})
    assert message == {
        "id": "e1",
        "kind": 9,
        "created_at": 5,
        "pubkey": AGENT,
        "author": "solo-1",
        "author_role": "orchestrator",
        "content": "hi",
        "tags": [
            ["h", CHANNEL],
            ["e", "r" * 64, "", "root"],
            ["e", "p" * 64, "", "reply"],
            ["p", USER],
            ["p"],
            ["p", USER],
        ],
        "channel_id": CHANNEL,
        "reply_to_event_id": "p" * 64,
        "mentioned_pubkeys": [USER, USER],
    }
    junk = normalize_message({"id": 3, "pubkey": None, "content": None, "tags": "x"}, {})
    assert junk["id"] == "" and junk["author"] == "unknown" and junk["tags"] == []
    assert junk["channel_id"] is None and junk["kind"] is None


def test_reply_to_event_id_is_the_reply_marker_only() -> None:
    """§8.2: a root-only (NIP-10) reference is no reply, though the thread rule reads it as a
    direct reply to that root; an unmarked `e` tag counts for neither."""
    root_only = event("r1", 5, tags=[["h", CHANNEL], ["e", "r" * 64, "", "root"]])
    unmarked = event("r2", 5, tags=[["h", CHANNEL], ["e", "p" * 64]])
    reply_first = event(
        "r3", 5, tags=[["h", CHANNEL], ["e", "p" * 64, "", "reply"], ["e", "q" * 64, "", "reply"]]
    )
    reply_to = [normalize_message(raw, {})["reply_to_event_id"] for raw in (root_only, unmarked)]
    assert reply_to == [None, None]
    assert normalize_message(reply_first, {})["reply_to_event_id"] == "p" * 64


def test_only_channel_message_kinds_of_this_channel() -> None:
    evidence = evidence_for(
        [
            event("a", 1),
            event("b", 1, kind=7),
            event("c", 1, tags=[["h", "other"]]),
            event("d", 1, kind=40002),
            event("a", 1),
        ]
    )
    assert [m["id"] for m in evidence["messages"]] == ["a", "d"]
    assert evidence["message_count"] == 2 and evidence["truncated"] is False
    assert "sig" not in evidence["messages"][0]


def test_order_task_first_then_arrival_then_id() -> None:
    task = "t" * 64
    raw = [
        event("z", 10),
        event("y", 10),
        event("x", 10),
        event(task, 10, pubkey=USER),
        event("old", 9),
        event("none", None),
        event("m", 10),
    ]
    evidence = evidence_for(raw, task_event_id=task, arrival={"y": 1, "z": 2, task: 3})
    assert [m["id"] for m in evidence["messages"]] == ["old", task, "y", "z", "m", "x", "none"]
    assert evidence["messages"][1]["author"] == "user"


def test_directory_name_wins_and_about_defaults_to_empty() -> None:
    evidence = evidence_for([event("a", 1, pubkey=BOT)])
    assert evidence["messages"][0]["author"] == "Aurora Audit Bot"
    assert evidence["messages"][0]["author_role"] == "bot"
    assert evidence["directory"][0]["about"] == ""


def test_cap_keeps_the_newest_1000_and_sets_truncated() -> None:
    exactly = evidence_for([event(f"{i:04d}", i) for i in range(1000)])
    assert exactly["truncated"] is True and exactly["message_count"] == 1000
    more = evidence_for([event(f"{i:04d}", i) for i in range(1005)])
    assert more["truncated"] is True
    assert more["messages"][0]["id"] == "0005"
    fewer = evidence_for([event(f"{i:04d}", i) for i in range(999)])
    assert fewer["truncated"] is False


def test_top_level_keys() -> None:
    evidence = evidence_for([])
    assert set(evidence) == {
        "schema_version",
        "trial",
        "task_name",
        "task_event_id",
        "completion_message_id",
        "channel_members",
        "agent_memory",
        "identities",
        "directory",
        "scripted_events",
        "observed_channels",
        "message_count",
        "truncated",
        "messages",
        "trace",
        "relay_events",
        "relay_events_scope",
        "agent_files",
    }
    assert evidence["trial"] == {"run_id": "job", "trial_id": "trial", "channel_id": CHANNEL}


def test_agent_memory_is_sorted_by_slug_per_agent() -> None:
    evidence = build_evidence(
        run_id="r",
        trial_id="t",
        channel_id="c",
        task_name="x",
        task_event_id=None,
        completion_message_id=None,
        identities={},
        directory=[],
        scripted_events=[],
        observed_channels=[],
        raw_events=[],
        channel_members=[{"pubkey": "aa" * 32, "role": "owner", "name": "user"}],
        agent_memory={"solo-1": [{"slug": "zeta"}, {"slug": "alpha"}]},
    )
    assert [row["slug"] for row in evidence["agent_memory"]["solo-1"]] == ["alpha", "zeta"]
    assert evidence["channel_members"] == [{"pubkey": "aa" * 32, "role": "owner", "name": "user"}]
