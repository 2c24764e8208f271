"""A stand-in `buzz` CLI for the offline solution round trip (dataset.md §2.9).

It keeps a tiny relay in the JSON file named by `FAKE_BUZZ_STATE` and answers the commands the
reference and negative solutions use, with the output shapes of buzz-cli.md, acting as the agent.
Deliberately simple: `messages send` p-tags exactly the `--mention` values (no `@Name`
resolution) and never refuses; anything else is a `user_error` so a script cannot silently rely on
an unmodelled command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any


class FakeBuzzError(Exception):
    pass


class NoExitParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise FakeBuzzError(message)


def next_event(state: dict[str, Any], pubkey: str, tags: list[list[str]], content: str) -> dict:
    """Appends a kind-9 event with a fresh 64-hex id and the next second as created_at."""
    state["clock"] += 1
    seed = f"{state['clock']}:{pubkey}:{content}".encode()
    event = {
        "id": hashlib.sha256(seed).hexdigest(),
        "pubkey": pubkey,
        "created_at": state["clock"],
        "kind": 9,
        "tags": tags,
        "content": content,
        "sig": "0" * 128,
    }
    state["events"].append(event)
    return event


def reply_tags(state: dict[str, Any], parent_id: str) -> list[list[str]]:
    """buzz-cli.md §5.1.3: a flat reply to a root, root+reply markers deeper down."""
    parent = next((e for e in state["events"] if e["id"] == parent_id), None)
    if parent is None:
        raise FakeBuzzError(f"not_found: reply-to event {parent_id} not found")
    markers = {tag[3]: tag[1] for tag in parent["tags"] if tag[0] == "e" and len(tag) >= 4}
    root = markers.get("root") or markers.get("reply") or parent_id
    if root == parent_id:
        return [["e", parent_id, "", "reply"]]
    return [["e", root, "", "root"], ["e", parent_id, "", "reply"]]


def messages_send(state: dict[str, Any], args: argparse.Namespace) -> dict:
    content = sys.stdin.read() if args.content == "-" else args.content
    if not content.strip():
        raise FakeBuzzError("message content is empty")
    tags = [["h", args.channel]]
    if args.reply_to:
        tags += reply_tags(state, args.reply_to)
    mentions = list(dict.fromkeys(args.mention))
    tags += [["p", pubkey] for pubkey in mentions]
    event = next_event(state, state["agent_pubkey"], tags, content)
    return {
        "event_id": event["id"],
        "accepted": True,
        "message": "stored",
        "mention_pubkeys": mentions,
        "channel_id": args.channel,
        "reply_to_event_id": args.reply_to,
        "root_event_id": args.reply_to,
        "created_at": event["created_at"],
    }


def messages_get(state: dict[str, Any], args: argparse.Namespace) -> list:
    in_channel = [e for e in state["events"] if ["h", args.channel] in e["tags"]]
    return sorted(in_channel, key=lambda e: (e["created_at"], e["id"]))[-args.limit :]


def channel_row(state: dict[str, Any], channel_id: str) -> dict:
    row = state["channels"].get(channel_id)
    if row is None:
        raise FakeBuzzError(f"not_found: channel {channel_id} not found or not visible")
    return row


def channels_create(state: dict[str, Any], args: argparse.Namespace) -> dict:
    channel_id = hashlib.sha256(f"channel:{len(state['channels'])}".encode()).hexdigest()[:32]
    row = {
        "channel_id": channel_id,
        "name": args.name,
        "channel_type": args.type,
        "visibility": args.visibility,
        "archived": False,
        "about": "",
        "ttl_seconds": args.ttl,
        "topic": None,
        "purpose": None,
        "creator": state["agent_pubkey"],
    }
    state["channels"][channel_id] = row
    state["members"][channel_id] = [{"pubkey": state["agent_pubkey"], "role": "owner"}]
    return {"channel_id": channel_id, "event_id": "0" * 64, "accepted": True, "message": "", **row}


def channels_search(state: dict[str, Any], args: argparse.Namespace) -> list:
    query = args.query.strip().casefold()
    rows = [
        row
        for row in state["channels"].values()
        if (row["name"].casefold() == query if args.exact else query in row["name"].casefold())
        and (args.include_archived or not row["archived"])
    ]
    return sorted(rows, key=lambda row: (row["name"].casefold(), row["channel_id"]))


def channels_members(state: dict[str, Any], args: argparse.Namespace) -> list:
    channel_row(state, args.channel)
    names = {profile["pubkey"]: profile["display_name"] for profile in state["profiles"]}
    return [{**row, "name": names.get(row["pubkey"])} for row in state["members"][args.channel]]


def channels_add_member(state: dict[str, Any], args: argparse.Namespace) -> dict:
    channel_row(state, args.channel)
    members = state["members"][args.channel]
    members[:] = [row for row in members if row["pubkey"] != args.pubkey]
    members.append({"pubkey": args.pubkey, "role": args.role})
    return {"channel_id": args.channel, "pubkey": args.pubkey, "role": args.role, "accepted": True}


def users_get(state: dict[str, Any], args: argparse.Namespace) -> list:
    profiles = state["profiles"]
    if args.name is not None:
        wanted = args.name.casefold()
        return [
            p
            for p in profiles
            if (
                p["display_name"].casefold() == wanted
                if args.exact
                else wanted in p["display_name"].casefold()
            )
        ]
    by_pubkey = {p["pubkey"]: p for p in profiles}
    requested = args.pubkey or [state["agent_pubkey"]]
    return [by_pubkey.get(pk, {"pubkey": pk, "found": False}) for pk in dict.fromkeys(requested)]


def mem_ls(state: dict[str, Any], _args: argparse.Namespace) -> list:
    return [
        {"slug": slug, "bytes": len(value.encode())}
        for slug, value in sorted(state["memories"].items())
    ]


def mem_get(state: dict[str, Any], args: argparse.Namespace) -> dict:
    if args.slug not in state["memories"]:
        raise FakeBuzzError(f"not_found: memory '{args.slug}' not found")
    return {"slug": args.slug, "value": state["memories"][args.slug]}


def parser() -> NoExitParser:
    root = NoExitParser(prog="buzz")
    groups = root.add_subparsers(dest="group", required=True)
    commands = {
        group: groups.add_parser(group).add_subparsers(dest="command", required=True)
        for group in ("messages", "channels", "users", "mem")
    }

    def command(group: str, name: str, handler) -> NoExitParser:
        sub = commands[group].add_parser(name)
        sub.set_defaults(handler=handler)
        return sub

    send = command("messages", "send", messages_send)
    send.add_argument("--channel", required=True)
    send.add_argument("--content", required=True)
    send.add_argument("--reply-to")
    send.add_argument("--mention", action="append", default=[])
    get = command("messages", "get", messages_get)
    get.add_argument("--channel", required=True)
    get.add_argument("--limit", type=int, default=50)
    create = command("channels", "create", channels_create)
    create.add_argument("--name", required=True)
    create.add_argument("--type", default="stream", choices=("stream", "forum"))
    create.add_argument("--visibility", default="open", choices=("open", "private"))
    create.add_argument("--ttl", type=int)
    search = command("channels", "search", channels_search)
    search.add_argument("--query", required=True)
    search.add_argument("--exact", action="store_true")
    search.add_argument("--include-archived", action="store_true")
    command("channels", "members", channels_members).add_argument("--channel", required=True)
    add = command("channels", "add-member", channels_add_member)
    add.add_argument("--channel", required=True)
    add.add_argument("--pubkey", required=True)
    add.add_argument("--role", default="member", choices=("member", "bot", "admin"))
    users = command("users", "get", users_get)
    users.add_argument("--name")
    users.add_argument("--exact", action="store_true")
    users.add_argument("--pubkey", action="append", default=[])
    command("mem", "ls", mem_ls)
    command("mem", "get", mem_get).add_argument("slug")
    return root


def main() -> int:
    state_path = Path(os.environ["FAKE_BUZZ_STATE"])
    state = json.loads(state_path.read_text(encoding="utf-8"))
    try:
        args = parser().parse_args()
        output = args.handler(state, args)
    except FakeBuzzError as error:
        print(
            json.dumps({"error": "user_error", "message": str(error), "retryable": False}),
            file=sys.stderr,
        )
        return 1
    state_path.write_text(json.dumps(state), encoding="utf-8")
    print(json.dumps(output, ensure_ascii=False, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
