"""`buzz mem …` against a real relay (buzz-cli.md §8, protocol.md §11, buzz-cli.md §11)."""

import asyncio
import hashlib
import time

import asyncpg
import pytest

from orchestra.buzz import BuzzError
from orchestra.nostr import memory, nip44
from orchestra.nostr.kinds import Kind


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


async def test_round_trip_never_stores_the_value_or_slug_in_clear(buzz, make_client, start_relay):
    relay = await asyncio.to_thread(start_relay)
    me = make_client(url=relay.url)
    value = "In April 2024, we had 352,345 total customers.\n\n  ünïcode kept  "
    argv = ("--relay", relay.url)
    written = await buzz(
        me, *argv, "mem", "set", "total-customers-metric", "-", stdin=value.encode() + b"\n"
    )
    assert written.code == 0, written.stderr
    assert written.json["hash"] == sha(value) and written.json["accepted"] is True
    got = (await buzz(me, *argv, "mem", "get", "total-customers-metric")).json
    assert (got["value"], got["hash"], got["event_id"]) == (
        value,
        sha(value),
        written.json["event_id"],
    )
    listed = (await buzz(me, *argv, "mem", "ls")).json
    assert listed == [
        {
            "slug": "total-customers-metric",
            "updated_at": written.json["updated_at"],
            "bytes": len(value.encode()),
            "hash": sha(value),
        }
    ]
    connection = await asyncpg.connect(relay.database_url)
    try:
        tables = await connection.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        dump = []
        for table in tables:
            rows = await connection.fetch(
                f'SELECT CAST(t AS text) AS row FROM "{table["table_name"]}" t'
            )
            dump += [row["row"] for row in rows]
    finally:
        await connection.close()
    everything = "\n".join(dump)
    assert written.json["event_id"] in everything  # the dump does contain the stored event
    assert "352,345" not in everything
    assert "total-customers-metric" not in everything


async def test_set_get_ls_rm_hash_and_tombstones(buzz, make_client):
    me = make_client()
    for slug, value in (("b/notes", "two"), ("a.core", "one"), ("c", "three")):
        assert (await buzz(me, "mem", "set", slug, value)).code == 0
    assert [row["slug"] for row in await me.mem_ls()] == ["a.core", "b/notes", "c"]
    assert (await buzz(me, "mem", "hash", "c")).json == {"slug": "c", "hash": sha("three")}
    removed = await buzz(me, "mem", "rm", "b/notes")
    assert removed.code == 0 and removed.json["removed"] is True
    assert [row["slug"] for row in await me.mem_ls()] == ["a.core", "c"]
    for command in (("get", "b/notes"), ("hash", "b/notes"), ("rm", "b/notes")):
        missing = await buzz(me, "mem", *command)
        assert (missing.code, missing.error["error"]) == (1, "not_found")
        assert missing.error["message"] == "memory 'b/notes' not found"
    assert (await buzz(me, "mem", "set", "b/notes", "back")).code == 0
    assert (await me.mem_get(slug="b/notes"))["value"] == "back"


async def test_two_sets_within_one_second_both_apply(make_client):
    me = make_client()
    first = await me.mem_set(slug="core", value="v1")
    second = await me.mem_set(slug="core", value="v2")
    third = await me.mem_set(slug="core", value="v3")
    assert first["updated_at"] < second["updated_at"] < third["updated_at"]
    assert (await me.mem_get(slug="core"))["value"] == "v3"


async def test_empty_values_invalid_slugs_and_size(buzz, make_client):
    me = make_client()
    empty = await buzz(me, "mem", "set", "core", "-", stdin=b"\n")
    assert (empty.code, empty.error["message"]) == (1, "memory value is empty")
    allowed = await buzz(me, "mem", "set", "core", "", "--allow-empty")
    assert allowed.code == 0 and (await me.mem_get(slug="core"))["value"] == ""
    bad = await buzz(me, "mem", "get", "../etc")
    assert bad.code == 1 and "invalid slug" in bad.error["message"]
    large = await buzz(me, "mem", "set", "big", "x" * 65_600)
    assert (large.code, large.error["message"]) == (1, "memory value too large")
    near_limit = "y" * 65_000
    assert (await buzz(me, "mem", "set", "big", near_limit)).code == 0
    assert (await me.mem_get(slug="big"))["value"] == near_limit


async def test_base_hash_conflicts_exit_5(buzz, make_client):
    me = make_client()
    fresh = await buzz(me, "mem", "set", "plan", "v1", "--base-hash", "none")
    assert fresh.code == 0
    again = await buzz(me, "mem", "set", "plan", "v2", "--base-hash", "none")
    assert again.code == 5
    assert again.error == {
        "error": "conflict",
        "message": f"memory 'plan' changed concurrently (current hash {sha('v1')})",
        "retryable": False,
    }
    stale = await buzz(me, "mem", "set", "plan", "v2", "--base-hash", sha("v0"))
    assert stale.code == 5
    ok = await buzz(me, "mem", "set", "plan", "v2", "--base-hash", sha("v1"))
    assert ok.code == 0
    missing = await buzz(me, "mem", "set", "other", "x", "--base-hash", sha("x"))
    assert missing.code == 5
    assert missing.error["message"] == "memory 'other' changed concurrently (current hash none)"


async def test_relay_newer_version_maps_to_conflict(make_client, monkeypatch):
    me = make_client()
    # A concurrent writer publishes a newer version after our read of the head.
    newer = memory.encode_entry("race", "theirs")
    tags = [["d", memory.blinded_slug(me._keys, "race")]]
    content = nip44.encrypt(newer, memory.self_key(me._keys))
    real_head = me._head
    reads = []

    async def head_read_before_the_concurrent_write(slug):
        reads.append(slug)
        if len(reads) == 1:
            await me.publish(Kind.MEMORY, content, tags, created_at=int(time.time()) + 600)
            return None
        return await real_head(slug)

    monkeypatch.setattr(me, "_head", head_read_before_the_concurrent_write)
    with pytest.raises(BuzzError) as caught:
        await me.mem_set(slug="race", value="mine")
    assert caught.value.exit_code == 5
    assert (
        caught.value.message == f"memory 'race' changed concurrently (current hash {sha('theirs')})"
    )


async def test_another_identity_cannot_read_the_entries(make_client):
    owner, other = make_client(), make_client()
    await owner.mem_set(slug="core", value="private")
    assert await other.mem_ls() == []
    stolen = await other.query([{"kinds": [Kind.MEMORY], "authors": [owner.pubkey]}])
    assert stolen == []
