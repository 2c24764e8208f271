"""The `buzz` argument parser (buzz-cli.md §1, §4-§8). Parse errors raise a JSON `user_error`."""

import argparse
from typing import NoReturn, TypeAlias

from orchestra import __version__
from orchestra.buzz.errors import user_error
from orchestra.nostr.kinds import CHANNEL_MESSAGE_KINDS, Kind

DEFAULT_RELAY = "ws://localhost:3000"
GLOBAL_DESTS = ("relay", "private_key", "auth_tag", "timeout", "format")


class JsonErrorParser(argparse.ArgumentParser):
    """Argument errors become `user_error` (exit 1) instead of a usage dump on stderr."""

    def error(self, message: str) -> NoReturn:
        raise user_error(f"{self.prog}: {message}")


# Subparsers of a `JsonErrorParser` are `JsonErrorParser`s too (argparse uses the parent's class).
Subcommands: TypeAlias = "argparse._SubParsersAction[JsonErrorParser]"


_DEFAULT_KINDS = ",".join(str(kind) for kind in CHANNEL_MESSAGE_KINDS)


def _kinds(text: str) -> list[int]:
    try:
        kinds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid kinds {text!r}: expected K,K,…") from None
    if not kinds or any(not 0 <= kind <= 65535 for kind in kinds):
        raise argparse.ArgumentTypeError(f"invalid kinds {text!r}: integers 0-65535")
    return kinds


def _command(
    group: Subcommands,
    name: str,
    operation: str,
    help_text: str,
) -> argparse.ArgumentParser:
    parser = group.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)
    parser.set_defaults(operation=operation)
    return parser


def _add_messages(groups: Subcommands) -> None:
    commands = groups.add_parser(
        "messages", help="send and read channel messages", allow_abbrev=False
    )
    sub = commands.add_subparsers(dest="command", metavar="<command>", required=True)
    send = _command(sub, "send", "messages_send", "post a message (kind 9) to a channel")
    send.add_argument("--channel", required=True, help="channel UUID")
    send.add_argument("--content", required=True, help="message text, or - to read stdin")
    send.add_argument(
        "--mention", action="append", help="explicit recipient (hex or npub), repeatable"
    )
    send.add_argument("--reply-to", help="reply in the thread of this event id")
    send.add_argument(
        "--kind", type=int, default=Kind.MESSAGE, help=f"only {Kind.MESSAGE} is supported"
    )
    get = _command(sub, "get", "messages_get", "read the newest messages of a channel")
    get.add_argument("--channel", required=True)
    get.add_argument("--limit", type=int, default=50, help="1-10000 (default 50)")
    get.add_argument("--before", type=int, help="only created_at < TS")
    get.add_argument("--since", type=int, help="only created_at >= TS")
    get.add_argument("--kinds", type=_kinds, help=f"K,K,… (default {_DEFAULT_KINDS})")
    get.add_argument("--all", action="store_true", help="every matching message")
    thread = _command(sub, "thread", "messages_thread", "read a thread: root, then replies")
    thread.add_argument("--channel", required=True)
    thread.add_argument("--event", required=True, help="any event of the thread")
    thread.add_argument("--limit", type=int, default=500, help="1-10000 replies (default 500)")


def _add_channels(groups: Subcommands) -> None:
    commands = groups.add_parser("channels", help="create and manage channels", allow_abbrev=False)
    sub = commands.add_subparsers(dest="command", metavar="<command>", required=True)
    create = _command(sub, "create", "channels_create", "create a channel (you become its owner)")
    create.add_argument("--name", required=True)
    create.add_argument("--type", default="stream", help="stream|forum")
    create.add_argument("--visibility", default="open", help="open|private")
    create.add_argument("--description")
    create.add_argument("--ttl", type=int, help="seconds without messages before auto-archive")
    for name, operation, help_text in (
        ("get", "channels_get", "one channel row"),
        ("members", "channels_members", "members with roles and names"),
        ("archive", "channels_archive", "archive a channel"),
        ("unarchive", "channels_unarchive", "unarchive a channel"),
        ("join", "channels_join", "join an open channel"),
        ("leave", "channels_leave", "leave a channel"),
    ):
        _command(sub, name, operation, help_text).add_argument("--channel", required=True)
    search = _command(sub, "search", "channels_search", "find channels by name")
    search.add_argument("--query", required=True)
    search.add_argument("--exact", action="store_true")
    search.add_argument("--include-archived", action="store_true")
    search.add_argument("--limit", type=int, default=1000)
    add = _command(sub, "add-member", "channels_add_member", "add a member or bot")
    add.add_argument("--channel", required=True)
    add.add_argument("--pubkey", required=True)
    add.add_argument("--role", default="member", help="member|bot|admin")
    remove = _command(sub, "remove-member", "channels_remove_member", "remove a member")
    remove.add_argument("--channel", required=True)
    remove.add_argument("--pubkey", required=True)
    update = _command(sub, "update", "channels_update", "edit channel metadata")
    update.add_argument("--channel", required=True)
    update.add_argument("--name")
    update.add_argument("--description")
    update.add_argument("--visibility", help="open|private")
    update.add_argument("--ttl", type=int)
    update.add_argument("--no-ttl", action="store_true")


def _add_users(groups: Subcommands) -> None:
    commands = groups.add_parser("users", help="profiles", allow_abbrev=False)
    sub = commands.add_subparsers(dest="command", metavar="<command>", required=True)
    get = _command(sub, "get", "users_get", "profiles by pubkey or display name")
    get.add_argument("--pubkey", action="append", help="hex or npub, repeatable")
    get.add_argument("--name", help="display-name search (case-insensitive substring)")
    get.add_argument("--exact", action="store_true")
    get.add_argument("--limit", type=int, default=50)
    profile = _command(sub, "set-profile", "users_set_profile", "update your own profile")
    profile.add_argument("--name")
    profile.add_argument("--display-name")
    profile.add_argument("--about")
    profile.add_argument("--picture")
    profile.add_argument("--bot", dest="bot", action="store_const", const=True, default=None)
    profile.add_argument("--no-bot", dest="bot", action="store_const", const=False)


def _add_memory(groups: Subcommands) -> None:
    commands = groups.add_parser("mem", help="private encrypted agent memory", allow_abbrev=False)
    sub = commands.add_subparsers(dest="command", metavar="<command>", required=True)
    _command(sub, "ls", "mem_ls", "list memory entries")
    for name, operation, help_text in (
        ("get", "mem_get", "read one entry"),
        ("hash", "mem_hash", "sha256 of one entry's value"),
        ("rm", "mem_rm", "delete one entry"),
    ):
        _command(sub, name, operation, help_text).add_argument("slug")
    set_ = _command(sub, "set", "mem_set", "write one entry")
    set_.add_argument("slug")
    set_.add_argument("value", help="the value, or - to read stdin")
    set_.add_argument("--allow-empty", action="store_true")
    set_.add_argument("--base-hash", help="expected current hash, or none")


def build_parser() -> argparse.ArgumentParser:
    parser = JsonErrorParser(
        prog="buzz",
        description="Buzz command-line client: JSON on stdout, JSON errors on stderr.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--relay", help="relay URL (env BUZZ_RELAY_URL, default ws://localhost:3000)"
    )
    parser.add_argument("--private-key", help="hex or nsec secret key (env BUZZ_PRIVATE_KEY)")
    parser.add_argument(
        "--auth-tag", help="accepted for compatibility and ignored (env BUZZ_AUTH_TAG)"
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds per relay wait (env BUZZ_CLI_TIMEOUT, 30)"
    )
    parser.add_argument("--format", choices=("json", "compact"), default="json")
    parser.add_argument("--version", action="version", version=f"buzz {__version__}")
    groups = parser.add_subparsers(dest="group", metavar="<group>", required=True)
    _add_messages(groups)
    _add_channels(groups)
    _add_users(groups)
    _add_memory(groups)
    return parser
