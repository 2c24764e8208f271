"""The `buzz` argument parser (buzz-cli.md §1, §4-§8). Parse errors raise a JSON `user_error`."""

import argparse
from typing import Any, NoReturn, TypeAlias

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


def _group(groups: Subcommands, name: str, help_text: str) -> Subcommands:
    """A command group (`buzz messages …`); its commands are added to what this returns."""
    parser = groups.add_parser(
        name,
        help=help_text,
        description=help_text,
        parents=[_globals_parent()],
        allow_abbrev=False,
    )
    parser.set_defaults(operation=None)  # no command given: `parse_arguments` says so
    return parser.add_subparsers(dest="command", metavar="<command>")


def _command(
    group: Subcommands,
    name: str,
    operation: str,
    help_text: str,
) -> argparse.ArgumentParser:
    parser = group.add_parser(
        name,
        help=help_text,
        description=help_text,
        parents=[_globals_parent()],
        allow_abbrev=False,
    )
    parser.set_defaults(operation=operation)
    return parser


def _add_messages(groups: Subcommands) -> None:
    sub = _group(groups, "messages", "send and read channel messages")
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
    get.add_argument("--channel", required=True, help="channel UUID")
    get.add_argument("--limit", type=int, default=50, help="1-10000 (default 50)")
    get.add_argument("--before", type=int, help="only created_at < TS")
    get.add_argument("--since", type=int, help="only created_at >= TS")
    get.add_argument("--kinds", type=_kinds, help=f"K,K,… (default {_DEFAULT_KINDS})")
    get.add_argument("--all", action="store_true", help="every matching message")
    thread = _command(sub, "thread", "messages_thread", "read a thread: root, then replies")
    thread.add_argument("--channel", required=True, help="channel UUID")
    thread.add_argument("--event", required=True, help="any event of the thread")
    thread.add_argument("--limit", type=int, default=500, help="1-10000 replies (default 500)")


def _add_channels(groups: Subcommands) -> None:
    sub = _group(groups, "channels", "create and manage channels")
    create = _command(sub, "create", "channels_create", "create a channel (you become its owner)")
    create.add_argument("--name", required=True, help="channel name")
    create.add_argument("--type", default="stream", help="stream|forum (default stream)")
    create.add_argument("--visibility", default="open", help="open|private (default open)")
    create.add_argument("--description", help="what the channel is for")
    create.add_argument(
        "--ttl", type=int, help="seconds without messages before auto-archive (default none)"
    )
    for name, operation, help_text in (
        ("get", "channels_get", "one channel row"),
        ("members", "channels_members", "members with roles and names"),
        ("archive", "channels_archive", "archive a channel"),
        ("unarchive", "channels_unarchive", "unarchive a channel"),
        ("join", "channels_join", "join an open channel"),
        ("leave", "channels_leave", "leave a channel"),
    ):
        _command(sub, name, operation, help_text).add_argument(
            "--channel", required=True, help="channel UUID"
        )
    search = _command(sub, "search", "channels_search", "find channels by name")
    search.add_argument("--query", required=True, help="text in the channel name")
    search.add_argument(
        "--exact", action="store_true", help="case-insensitive equality instead of substring"
    )
    search.add_argument(
        "--include-archived", action="store_true", help="also return archived channels"
    )
    search.add_argument("--limit", type=int, default=1000, help="at most N rows (default 1000)")
    add = _command(sub, "add-member", "channels_add_member", "add a member or bot")
    add.add_argument("--channel", required=True, help="channel UUID")
    add.add_argument("--pubkey", required=True, help="the new member (hex or npub)")
    add.add_argument("--role", default="member", help="member|bot|admin (default member)")
    remove = _command(sub, "remove-member", "channels_remove_member", "remove a member")
    remove.add_argument("--channel", required=True, help="channel UUID")
    remove.add_argument("--pubkey", required=True, help="the member (hex or npub)")
    update = _command(sub, "update", "channels_update", "edit channel metadata")
    update.add_argument("--channel", required=True, help="channel UUID")
    update.add_argument("--name", help="new name")
    update.add_argument("--description", help="new description")
    update.add_argument("--visibility", help="open|private")
    update.add_argument("--ttl", type=int, help="new auto-archive time in seconds")
    update.add_argument("--no-ttl", action="store_true", help="never auto-archive")


def _add_users(groups: Subcommands) -> None:
    sub = _group(groups, "users", "profiles")
    get = _command(sub, "get", "users_get", "profiles by pubkey or display name")
    get.add_argument("--pubkey", action="append", help="hex or npub, repeatable")
    get.add_argument("--name", help="display-name search (case-insensitive substring)")
    get.add_argument("--exact", action="store_true", help="--name matches the whole display name")
    get.add_argument("--limit", type=int, default=50, help="at most N rows (default 50)")
    profile = _command(sub, "set-profile", "users_set_profile", "update your own profile")
    profile.add_argument("--name", help="sets name")
    profile.add_argument("--display-name", help="sets display_name (what @mentions match)")
    profile.add_argument("--about", help="sets about")
    profile.add_argument("--picture", metavar="URL", help="sets picture")
    profile.add_argument(
        "--bot",
        dest="bot",
        action="store_const",
        const=True,
        default=None,
        help="marks the profile as a bot",
    )
    profile.add_argument(
        "--no-bot", dest="bot", action="store_const", const=False, help="clears the bot mark"
    )


def _add_memory(groups: Subcommands) -> None:
    sub = _group(groups, "mem", "private encrypted agent memory")
    _command(sub, "ls", "mem_ls", "list memory entries")
    for name, operation, help_text in (
        ("get", "mem_get", "read one entry"),
        ("hash", "mem_hash", "sha256 of one entry's value"),
        ("rm", "mem_rm", "delete one entry"),
    ):
        _command(sub, name, operation, help_text).add_argument("slug", help="the entry's name")
    set_ = _command(sub, "set", "mem_set", "write one entry")
    set_.add_argument("slug", help="the entry's name")
    set_.add_argument("value", help="the value, or - to read stdin")
    set_.add_argument("--allow-empty", action="store_true", help="accept an empty value")
    set_.add_argument(
        "--base-hash",
        metavar="HEX|none",
        help="write only if the current value has this hash (none: only if there is none)",
    )


def _global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The global options (§1); on groups and commands their defaults are suppressed, so a value
    given anywhere on the line wins and one given nowhere keeps the top-level default."""

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    options = parser.add_argument_group("global options (accepted anywhere on the line)")
    options.add_argument(
        "--relay",
        metavar="URL",
        default=default(None),
        help=f"relay URL (env BUZZ_RELAY_URL; default {DEFAULT_RELAY})",
    )
    options.add_argument(
        "--private-key",
        metavar="KEY",
        default=default(None),
        help="your identity: 64 hex or nsec1… (env BUZZ_PRIVATE_KEY; required)",
    )
    options.add_argument(
        "--auth-tag",
        metavar="JSON",
        default=default(None),
        help="accepted for compatibility and ignored (env BUZZ_AUTH_TAG)",
    )
    options.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=default(None),
        help="limit of each wait on the relay (env BUZZ_CLI_TIMEOUT; default 30)",
    )
    options.add_argument(
        "--format",
        choices=("json", "compact"),
        default=default("json"),
        help="compact shortens messages get/thread rows (default json)",
    )


def _globals_parent() -> JsonErrorParser:
    parent = JsonErrorParser(add_help=False)
    _global_options(parent, defaults=False)
    return parent


def build_parser() -> argparse.ArgumentParser:
    parser = JsonErrorParser(
        prog="buzz",
        description="Buzz command-line client: JSON on stdout, JSON errors on stderr.",
        epilog="Run `buzz <group> --help` and `buzz <group> <command> --help` for more.",
        allow_abbrev=False,
    )
    _global_options(parser, defaults=True)
    parser.add_argument("--version", action="version", version=f"buzz {__version__}")
    groups = parser.add_subparsers(dest="group", metavar="<group>")
    _add_messages(groups)
    _add_channels(groups)
    _add_users(groups)
    _add_memory(groups)
    return parser


def parse_arguments(argv: list[str]) -> dict[str, Any]:
    """The arguments of one invocation; a missing group or command is a `user_error` that
    comes only after unknown options were reported (`buzz --bogus` names `--bogus`)."""
    parser = build_parser()
    args = vars(parser.parse_args(argv))
    if args.get("operation") is None:
        group = args.get("group")
        if group is None:
            parser.error("a group is required: messages, channels, users or mem (see --help)")
        raise user_error(f"buzz {group}: a command is required (see buzz {group} --help)")
    return args
