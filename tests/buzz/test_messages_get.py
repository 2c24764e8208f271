"""`buzz messages get` paging against real relays (buzz-cli.md §5.2, §11)."""

import asyncio
import time

import pytest


async def publish_history(client, channel: str, seconds: list[int]) -> list[dict]:
    """Publish one kind-9 event per entry of `seconds` (its created_at)."""
    events = []
    for start in range(0, len(seconds), 50):
        batch = seconds[start : start + 50]
        results = await asyncio.gather(
            *(
                client.publish(9, f"message {start + i}", [["h", channel]], created_at=second)
                for i, second in enumerate(batch)
            )
        )
        events += [result["event"] for result in results]
    return sorted(events, key=lambda e: (e["created_at"], e["id"]))


@pytest.fixture
async def history(make_client):
    owner = make_client()
    channel = (await owner.channels_create(name="history"))["channel_id"]
    base = int(time.time()) - 1800
    events = await publish_history(owner, channel, [base + i // 7 for i in range(520)])
    return owner, channel, events


async def test_reads_more_than_a_relay_page(buzz, history):
    owner, channel, events = history
    everything = await buzz(owner, "messages", "get", "--channel", channel, "--all")
    assert everything.code == 0, everything.stderr
    assert [e["id"] for e in everything.json] == [e["id"] for e in events]
    assert everything.warnings == []
    newest = await buzz(owner, "messages", "get", "--channel", channel, "--limit", "510")
    assert [e["id"] for e in newest.json] == [e["id"] for e in events[-510:]]
    assert newest.warnings == [
        {
            "warning": "more_messages",
            "message": "returned the newest 510 messages; older ones exist (use --before or --all)",
        }
    ]
    exact = await buzz(owner, "messages", "get", "--channel", channel, "--limit", "520")
    assert len(exact.json) == 520 and exact.warnings == []
    default = await buzz(owner, "--format", "compact", "messages", "get", "--channel", channel)
    assert [e["id"] for e in default.json] == [e["id"] for e in events[-50:]]
    assert set(default.json[0]) == {"id", "pubkey", "created_at", "content"}


async def test_a_5000_message_channel_reads_back_complete(buzz, make_client):
    """N asked, N returned, across ten relay pages and crowded seconds."""
    owner = make_client()
    channel = (await owner.channels_create(name="long history"))["channel_id"]
    base = int(time.time()) - 3000
    events = await publish_history(owner, channel, [base + i // 9 for i in range(5000)])
    result = await buzz(owner, "messages", "get", "--channel", channel, "--limit", "5000")
    assert result.code == 0, result.stderr
    assert [e["id"] for e in result.json] == [e["id"] for e in events]
    assert result.warnings == []


async def test_before_is_strict_and_since_inclusive(buzz, history):
    owner, channel, events = history
    pivot = events[100]["created_at"]
    before = await buzz(
        owner, "messages", "get", "--channel", channel, "--before", str(pivot), "--all"
    )
    assert [e["id"] for e in before.json] == [e["id"] for e in events if e["created_at"] < pivot]
    since = await buzz(
        owner, "messages", "get", "--channel", channel, "--since", str(pivot), "--all"
    )
    assert [e["id"] for e in since.json] == [e["id"] for e in events if e["created_at"] >= pivot]
    window = await owner.messages_get(channel=channel, since=pivot, before=pivot + 1, limit=3)
    assert [e["id"] for e in window] == [e["id"] for e in events if e["created_at"] == pivot][-3:]
    assert owner.warnings[-1]["warning"] == "more_messages"


async def test_unknown_and_forbidden_channels(buzz, make_client):
    reader = make_client()
    unknown = "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"
    result = await buzz(reader, "messages", "get", "--channel", unknown)
    assert (result.code, result.error["error"]) == (1, "not_found")
    assert result.error["message"] == f"channel {unknown} not found or not visible"
    owner = make_client()
    private = (await owner.channels_create(name="secret", visibility="private"))["channel_id"]
    result = await buzz(reader, "messages", "get", "--channel", private)
    assert (result.code, result.error["message"]) == (3, "restricted: not a channel member")
    empty = await buzz(owner, "messages", "get", "--channel", private)
    assert (empty.code, empty.json) == (0, [])


async def test_small_relay_page_size(buzz, make_client, start_relay):
    relay = await asyncio.to_thread(start_relay, {"BUZZ_RELAY_MAX_LIMIT": "5"})
    owner = make_client(url=relay.url)
    channel = (await owner.channels_create(name="tiny pages"))["channel_id"]
    base = int(time.time()) - 600
    # Seconds of 4, 3, 4, 1, 4 events: pages of 5 end inside crowded seconds.
    seconds = [base] * 4 + [base + 1] * 3 + [base + 2] * 4 + [base + 3] + [base + 4] * 4
    events = await publish_history(owner, channel, seconds)
    assert await owner.max_limit() == 5
    result = await owner.messages_get(channel=channel, all=True)
    assert [e["id"] for e in result] == [e["id"] for e in events]
    newest = await owner.messages_get(channel=channel, limit=6)
    assert [e["id"] for e in newest] == [e["id"] for e in events[-6:]]

    await publish_history(owner, channel, [base + 5] * 5)
    argv = ["--relay", relay.url, "messages", "get", "--channel", channel, "--all"]
    crowded = await buzz(owner, *argv)
    assert crowded.code == 2 and crowded.stdout == ""
    assert crowded.error == {
        "error": "relay_error",
        "message": f"cannot page completely: 5 or more events share created_at {base + 5}",
        "retryable": False,
    }
