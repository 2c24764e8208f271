"""`buzz channels …` against a real relay (buzz-cli.md §6, §11)."""

ROW_FIELDS = [
    "channel_id",
    "name",
    "channel_type",
    "visibility",
    "archived",
    "about",
    "ttl_seconds",
    "topic",
    "purpose",
    "creator",
    "created_at",
]


async def test_create_with_every_flag_and_read_the_row(buzz, make_client):
    owner = make_client()
    result = await buzz(
        owner,
        "channels",
        "create",
        "--name",
        "Fix PR 1234",
        "--type",
        "forum",
        "--visibility",
        "private",
        "--description",
        "fix it",
        "--ttl",
        "3600",
    )
    assert result.code == 0, result.stderr
    created = result.json
    assert {
        k: created[k] for k in ("name", "channel_type", "visibility", "about", "ttl_seconds")
    } == {
        "name": "Fix PR 1234",
        "channel_type": "forum",
        "visibility": "private",
        "about": "fix it",
        "ttl_seconds": 3600,
    }
    row = (await buzz(owner, "channels", "get", "--channel", created["channel_id"])).json
    assert list(row) == ROW_FIELDS
    assert row["creator"] == owner.pubkey and isinstance(row["created_at"], int)
    assert (row["ttl_seconds"], row["archived"], row["visibility"]) == (3600, False, "private")
    plain = await owner.channels_create(name="plain")
    plain_row = await owner.channels_get(channel=plain["channel_id"])
    assert (plain_row["ttl_seconds"], plain_row["about"], plain_row["channel_type"]) == (
        None,
        "",
        "stream",
    )


async def test_create_refusals(buzz, make_client):
    owner = make_client()
    for argv, message in (
        (["--name", "x", "--ttl", "5"], "--ttl must be an integer between 60 and 31536000"),
        (["--name", "x", "--type", "chat"], "--type must be stream or forum"),
        (["--name", "  "], "--name must be 1-100 characters"),
    ):
        result = await buzz(owner, "channels", "create", *argv)
        assert (result.code, result.error["message"]) == (1, message)


async def test_search_exact_substring_archived_and_private(buzz, make_client):
    owner, stranger = make_client(), make_client()
    tag = owner.pubkey[:10]
    names = [f"{tag} Alpha", f"{tag} alpha beta", f"{tag} gamma"]
    ids = [(await owner.channels_create(name=name))["channel_id"] for name in names]
    hidden = await owner.channels_create(name=f"{tag} alpha hidden", visibility="private")
    await owner.channels_archive(channel=ids[2])
    found = await buzz(owner, "channels", "search", "--query", f"  {tag.upper()} ALPHA ")
    assert [r["channel_id"] for r in found.json] == [ids[0], ids[1], hidden["channel_id"]]
    exact = await owner.channels_search(query=f"{tag} alpha", exact=True)
    assert [r["channel_id"] for r in exact] == [ids[0]]
    assert await owner.channels_search(query=f"{tag} gamma") == []
    archived = await owner.channels_search(query=f"{tag} gamma", include_archived=True)
    assert [r["archived"] for r in archived] == [True]
    seen_by_stranger = await stranger.channels_search(query=tag)
    assert hidden["channel_id"] not in [r["channel_id"] for r in seen_by_stranger]
    limited = await owner.channels_search(query=tag, limit=1)
    assert len(limited) == 1


async def test_members_roles_sorting_and_idempotent_changes(buzz, make_client):
    owner, admin, member, bot = (make_client() for _ in range(4))
    await member.users_set_profile(name="Mia")
    channel = (await owner.channels_create(name="crew", visibility="private"))["channel_id"]
    for client, role in ((bot, "bot"), (member, "member"), (admin, "admin")):
        added = await buzz(
            owner,
            "channels",
            "add-member",
            "--channel",
            channel,
            "--pubkey",
            client.pubkey,
            "--role",
            role,
        )
        assert added.code == 0, added.stderr
        assert added.json["role"] == role and added.json["accepted"] is True
    again = await buzz(
        owner, "channels", "add-member", "--channel", channel, "--pubkey", member.pubkey
    )
    assert again.code == 0
    rows = (await buzz(owner, "channels", "members", "--channel", channel)).json
    assert [(r["pubkey"], r["role"]) for r in rows] == [
        (owner.pubkey, "owner"),
        (admin.pubkey, "admin"),
        (member.pubkey, "member"),
        (bot.pubkey, "bot"),
    ]
    assert [r["name"] for r in rows] == [None, None, "Mia", None]
    bad_role = await buzz(
        owner,
        "channels",
        "add-member",
        "--channel",
        channel,
        "--pubkey",
        bot.pubkey,
        "--role",
        "owner",
    )
    assert bad_role.error["message"] == "role must be member, bot or admin"
    for _ in range(2):
        removed = await buzz(
            owner, "channels", "remove-member", "--channel", channel, "--pubkey", bot.pubkey
        )
        assert removed.code == 0 and removed.json["removed"] is True
    not_allowed = await buzz(
        member, "channels", "add-member", "--channel", channel, "--pubkey", bot.pubkey
    )
    assert not_allowed.code == 3
    assert not_allowed.error["message"].startswith("restricted:")
    hidden = await buzz(bot, "channels", "members", "--channel", channel)
    assert (hidden.code, hidden.error["error"]) == (1, "not_found")


async def test_update_archive_join_leave(buzz, make_client):
    owner, visitor = make_client(), make_client()
    channel = (await owner.channels_create(name="lobby", ttl=600))["channel_id"]
    updated = await buzz(
        owner,
        "channels",
        "update",
        "--channel",
        channel,
        "--name",
        "Lobby 2",
        "--description",
        "new about",
        "--no-ttl",
    )
    assert updated.code == 0, updated.stderr
    assert (updated.json["name"], updated.json["about"], updated.json["ttl_seconds"]) == (
        "Lobby 2",
        "new about",
        None,
    )
    nothing = await buzz(owner, "channels", "update", "--channel", channel)
    assert nothing.code == 1
    private = await owner.channels_update(channel=channel, visibility="private", ttl=7200)
    assert (private["visibility"], private["ttl_seconds"]) == ("private", 7200)
    reopened = await owner.channels_update(channel=channel, visibility="open")
    assert (reopened["visibility"], reopened["ttl_seconds"], reopened["name"]) == (
        "open",
        7200,
        "Lobby 2",
    )
    joined = await buzz(visitor, "channels", "join", "--channel", channel)
    assert joined.json["already_member"] is False and joined.json["event_id"]
    again = await buzz(visitor, "channels", "join", "--channel", channel)
    assert again.code == 0
    assert (again.json["already_member"], again.json["event_id"]) == (True, None)
    left = await buzz(visitor, "channels", "leave", "--channel", channel)
    assert left.json["left"] is True
    for _ in range(2):
        archived = await buzz(owner, "channels", "archive", "--channel", channel)
        assert archived.code == 0 and archived.json["archived"] is True
    assert (await owner.channels_get(channel=channel))["archived"] is True
    unarchived = await buzz(owner, "channels", "unarchive", "--channel", channel)
    assert unarchived.json["archived"] is False
    # Archive again, usually within the same second as the first identical archive event.
    await owner.channels_archive(channel=channel)
    assert (await owner.channels_get(channel=channel))["archived"] is True
    private = (await owner.channels_create(name="vip", visibility="private"))["channel_id"]
    refused = await buzz(visitor, "channels", "join", "--channel", private)
    assert refused.code == 3
