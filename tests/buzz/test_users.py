"""`buzz users get|set-profile` against a real relay (buzz-cli.md §7, §11)."""

import asyncio

ROW_FIELDS = [
    "pubkey",
    "npub",
    "found",
    "name",
    "display_name",
    "about",
    "picture",
    "bot",
    "updated_at",
]


async def test_batch_get_with_missing_profiles(buzz, make_client):
    known, unknown = make_client(), make_client()
    await known.users_set_profile(name="Known", about="here")
    result = await buzz(
        known,
        "users",
        "get",
        "--pubkey",
        unknown.pubkey,
        "--pubkey",
        known.pubkey,
        "--pubkey",
        unknown.pubkey.upper(),
    )
    assert result.code == 0, result.stderr
    rows = result.json
    assert [r["pubkey"] for r in rows] == [unknown.pubkey, known.pubkey]
    assert list(rows[0]) == ROW_FIELDS
    assert (rows[0]["found"], rows[0]["name"], rows[0]["updated_at"]) == (False, None, None)
    assert (rows[1]["found"], rows[1]["display_name"], rows[1]["about"]) == (True, "Known", "here")
    own = await buzz(known, "users", "get")
    assert [r["pubkey"] for r in own.json] == [known.pubkey]


async def test_name_search_exact_and_substring(buzz, make_client):
    tag = make_client().pubkey[:8]
    people = [make_client() for _ in range(3)]
    await asyncio.gather(
        people[0].users_set_profile(name=f"Taylor {tag}", about="engineer"),
        people[1].users_set_profile(name=f"taylor {tag}", about="finance"),
        people[2].users_set_profile(name=f"Taylor Morgan {tag}"),
    )
    exact = await buzz(people[0], "users", "get", "--name", f"TAYLOR {tag}", "--exact")
    assert sorted(r["pubkey"] for r in exact.json) == sorted([people[0].pubkey, people[1].pubkey])
    assert {r["about"] for r in exact.json} == {"engineer", "finance"}
    substring = await people[0].users_get(name=tag)
    assert len(substring) == 3
    assert substring == sorted(substring, key=lambda r: (r["display_name"].lower(), r["pubkey"]))
    combined = await buzz(people[0], "users", "get", "--name", "x", "--pubkey", people[1].pubkey)
    assert combined.code == 1


async def test_set_profile_merges_and_republishes_within_one_second(buzz, make_client):
    me = make_client()
    await me.publish(0, '{"name":"old","website":"https://example.org"}', [])
    first = await buzz(me, "users", "set-profile", "--name", "Dana", "--bot")
    assert first.code == 0, first.stderr
    assert first.json["profile"] == {
        "name": "Dana",
        "website": "https://example.org",
        "display_name": "Dana",
        "bot": True,
    }
    second = await buzz(me, "users", "set-profile", "--about", "ops", "--no-bot")
    third = await buzz(me, "users", "set-profile", "--display-name", "D.")
    assert second.code == third.code == 0
    row = (await me.users_get())[0]
    assert (row["name"], row["display_name"], row["about"], row["bot"]) == (
        "Dana",
        "D.",
        "ops",
        False,
    )
    nothing = await buzz(me, "users", "set-profile")
    assert nothing.code == 1
