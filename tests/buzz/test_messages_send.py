"""`buzz messages send` against a real relay: content, mentions, replies (buzz-cli.md §5.1, §11)."""

from orchestra.nostr.bech32 import encode_npub


def p_tags(event: dict) -> list[str]:
    return [tag[1] for tag in event["tags"] if tag[0] == "p"]


async def stored(team, event_id: str) -> dict:
    event = await team.owner.event_by_id(event_id)
    assert event is not None
    return event


async def send(buzz, team, content: str, *extra: str, sender: str = "Alice"):
    return await buzz(
        team.members[sender],
        "messages",
        "send",
        "--channel",
        team.channel,
        "--content",
        content,
        *extra,
    )


async def test_stdin_content_is_byte_exact_except_trailing_newlines(buzz, team):
    text = "  leading spaces\n\nblank line above\ttab\nünïcödé 🎉 中文\n   \n"
    result = await buzz(
        team.owner,
        "messages",
        "send",
        "--channel",
        team.channel,
        "--content",
        "-",
        stdin=(text + "\r\n\n").encode(),
    )
    assert result.code == 0, result.stderr
    event = await stored(team, result.json["event_id"])
    assert event["content"] == text.rstrip("\n")
    assert event["content"].startswith("  leading spaces\n\nblank")


async def test_literal_backslash_n_in_an_argument_stays_literal(buzz, team):
    result = await send(buzz, team, r"line one\nline two")
    assert result.code == 0, result.stderr
    assert (await stored(team, result.json["event_id"]))["content"] == "line one\\nline two"


async def test_invalid_utf8_on_stdin_is_refused(buzz, team):
    result = await buzz(
        team.owner,
        "messages",
        "send",
        "--channel",
        team.channel,
        "--content",
        "-",
        stdin=b"\xff\xfe",
    )
    assert result.code == 1
    assert result.error["message"] == "content is not valid UTF-8"


async def test_output_fields_and_no_p_tags_for_narrative_text(buzz, team):
    result = await send(buzz, team, "Aurora Audit Bot completed the audit; mail bob@example.com")
    assert result.code == 0, result.stderr
    out = result.json
    assert list(out) == [
        "event_id",
        "accepted",
        "message",
        "mention_pubkeys",
        "channel_id",
        "reply_to_event_id",
        "root_event_id",
        "created_at",
    ]
    assert out["accepted"] is True and out["message"] == "stored"
    assert out["mention_pubkeys"] == [] and out["reply_to_event_id"] is None
    event = await stored(team, out["event_id"])
    assert event["tags"] == [["h", team.channel]]


async def test_mention_resolution_cases(buzz, team):
    cases = {
        "@Bob the total is 5": ["Bob"],
        "@bOB, thanks": ["Bob"],
        "@John Vincent Doe The annual total is $5,328.": ["John Vincent Doe"],
        "@Taylor Morgan Lee beats @Taylor.": ["Taylor Morgan Lee", "Taylor"],
        "(@Alice) see `@Sam` and\n```\n@Zoe\n```\n": ["Alice"],
        "@Bob! @Bob? @Bob": ["Bob"],
    }
    for content, names in cases.items():
        result = await send(buzz, team, content)
        assert result.code == 0, (content, result.stderr)
        expected = [team.pubkey(name) for name in names]
        assert result.json["mention_pubkeys"] == expected, content
        assert p_tags(await stored(team, result.json["event_id"])) == expected, content


async def test_unresolved_mention_is_refused_and_nothing_is_published(buzz, team):
    before = await team.owner.messages_get(channel=team.channel, all=True)
    result = await send(buzz, team, "thanks @Zoe.")
    assert result.code == 1 and result.stdout == ""
    assert result.error == {
        "error": "user_error",
        "message": "mention '@Zoe' does not match a current channel member; "
        "retry with --mention <pubkey>",
        "retryable": False,
    }
    assert await team.owner.messages_get(channel=team.channel, all=True) == before


async def test_ambiguous_mention_names_candidates_and_explicit_mention_resolves_it(buzz, team):
    result = await send(buzz, team, "@Sam please check")
    assert result.code == 1
    candidates = sorted([team.pubkey("Sam"), team.pubkey("sam")])
    assert result.error["message"] == (
        f"mention '@Sam' is ambiguous; candidates: {', '.join(candidates)}; "
        "retry with --mention <pubkey>"
    )
    details = {c["pubkey"]: c for c in result.error["details"]["candidates"]}
    assert details[team.pubkey("sam")] == {
        "pubkey": team.pubkey("sam"),
        "name": "sam",
        "about": "about sam",
    }
    chosen = encode_npub(team.pubkey("sam"))
    result = await send(buzz, team, "@Sam please check, @Nobody too", "--mention", chosen)
    assert result.code == 0, result.stderr
    assert result.json["mention_pubkeys"] == [team.pubkey("sam")]


async def test_explicit_non_member_mention_is_refused_with_the_add_member_hint(buzz, team):
    result = await send(buzz, team, "hello", "--mention", team.outsider.pubkey)
    assert result.code == 1
    assert result.error["details"] == {
        "missing_member_pubkeys": [team.outsider.pubkey],
        "add_member_command": f"buzz channels add-member --channel {team.channel} "
        "--pubkey <pubkey> --role <member|bot>",
    }


async def test_nostr_npub_uri_is_an_explicit_mention(buzz, team):
    uri = f"nostr:{encode_npub(team.pubkey('Taylor'))}"
    result = await send(buzz, team, f"cc {uri} and `nostr:{encode_npub(team.pubkey('Bob'))}`")
    assert result.code == 0, result.stderr
    assert result.json["mention_pubkeys"] == [team.pubkey("Taylor")]


async def test_reply_tags_for_root_direct_reply_and_nested_reply(buzz, team):
    root = (await send(buzz, team, "root question")).json["event_id"]
    direct = await send(buzz, team, "direct answer", "--reply-to", root.upper(), sender="Bob")
    assert direct.code == 0, direct.stderr
    direct_event = await stored(team, direct.json["event_id"])
    assert direct_event["tags"] == [["h", team.channel], ["e", root, "", "reply"]]
    assert (direct.json["reply_to_event_id"], direct.json["root_event_id"]) == (root, root)
    assert p_tags(direct_event) == []  # the parent's author is never added implicitly

    nested = await send(buzz, team, "@Bob nested", "--reply-to", direct.json["event_id"])
    nested_event = await stored(team, nested.json["event_id"])
    assert nested_event["tags"] == [
        ["h", team.channel],
        ["e", root, "", "root"],
        ["e", direct.json["event_id"], "", "reply"],
        ["p", team.pubkey("Bob")],
    ]
    deeper = await send(buzz, team, "deeper", "--reply-to", nested.json["event_id"])
    deeper_event = await stored(team, deeper.json["event_id"])
    assert deeper_event["tags"][1] == ["e", root, "", "root"]
    assert deeper.json["root_event_id"] == root

    thread = await buzz(
        team.owner,
        "messages",
        "thread",
        "--channel",
        team.channel,
        "--event",
        deeper.json["event_id"],
    )
    replies = thread.json[1:]
    assert thread.json[0]["id"] == root
    assert {e["id"] for e in replies} == {
        direct.json["event_id"],
        nested.json["event_id"],
        deeper.json["event_id"],
    }
    assert replies == sorted(replies, key=lambda e: (e["created_at"], e["id"]))
    limited = await buzz(
        team.owner,
        "--format",
        "compact",
        "messages",
        "thread",
        "--channel",
        team.channel,
        "--event",
        root,
        "--limit",
        "1",
    )
    assert [e["id"] for e in limited.json] == [root, replies[-1]["id"]]
    assert set(limited.json[0]) == {"id", "pubkey", "created_at", "content"}
    assert limited.warnings == [
        {"warning": "thread_truncated", "message": "showing the newest 1 of 3 replies; use --limit"}
    ]


async def test_reply_to_a_root_only_reply_keeps_its_root(buzz, team):
    """The NIP-10 form (`root` marker only) is a direct reply to the root (protocol.md §9.6):
    replying to it nests under that root, and `messages thread` finds the root from it."""
    root = (await send(buzz, team, "root question")).json["event_id"]
    nip10 = await team.owner.publish(
        9, "nip-10 style answer", [["h", team.channel], ["e", root, "", "root"]]
    )
    answer = await send(buzz, team, "follow-up", "--reply-to", nip10["event_id"])
    assert answer.code == 0, answer.stderr
    assert (await stored(team, answer.json["event_id"]))["tags"] == [
        ["h", team.channel],
        ["e", root, "", "root"],
        ["e", nip10["event_id"], "", "reply"],
    ]
    assert answer.json["root_event_id"] == root
    thread = await buzz(
        team.owner, "messages", "thread", "--channel", team.channel, "--event", nip10["event_id"]
    )
    assert thread.json[0]["id"] == root
    assert {e["id"] for e in thread.json[1:]} == {nip10["event_id"], answer.json["event_id"]}


async def test_reply_to_errors(buzz, team, make_client):
    other = await team.owner.channels_create(name="other")
    elsewhere = await team.owner.messages_send(channel=other["channel_id"], content="elsewhere")
    result = await send(buzz, team, "x", "--reply-to", elsewhere["event_id"])
    assert result.code == 1
    assert (
        result.error["message"] == f"reply-to event {elsewhere['event_id']} is in another channel"
    )
    missing = "ab" * 32
    result = await send(buzz, team, "x", "--reply-to", missing)
    assert (result.code, result.error["error"]) == (1, "not_found")
    assert result.error["message"] == f"reply-to event {missing} not found"


async def test_relay_refusals_keep_the_relay_message(buzz, team):
    result = await buzz(
        team.outsider, "messages", "send", "--channel", team.channel, "--content", "hi"
    )
    assert result.code == 3
    assert result.error == {
        "error": "auth_error",
        "message": "restricted: not a channel member",
        "retryable": False,
    }
    await team.owner.channels_archive(channel=team.channel)
    result = await send(buzz, team, "late")
    assert (result.code, result.error["message"]) == (1, "invalid: channel is archived")


async def test_local_refusals(buzz, team):
    result = await send(buzz, team, "hi", "--kind", "1")
    assert result.error["message"] == "only kind 9 messages are supported"
    result = await send(buzz, team, "   ")
    assert result.error["message"] == "message content is empty"
    result = await buzz(team.owner, "messages", "send", "--channel", "nope", "--content", "x")
    assert result.code == 1 and "invalid channel 'nope'" in result.error["message"]
    unknown = "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"
    result = await buzz(team.owner, "messages", "send", "--channel", unknown, "--content", "@Bob")
    assert result.error["message"] == (
        "could not load channel membership for mention preflight: "
        f"channel {unknown} not found or not visible"
    )
