"""buzz-acp's options (agent-harness.md §1.1): each an environment variable, also a flag."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from orchestra.nostr.keys import Keys, parse_pubkey
from orchestra.settings import (
    InvalidValue,
    Setting,
    SettingError,
    Word,
    boolean,
    choice,
    comma_list,
    fold,
    integer,
    strip,
    text,
    text_file,
)

Subscribe = Literal["mentions", "all"]
RespondTo = Literal["anyone", "owner-only", "allowlist", "nobody"]


def private_key(value: str) -> Keys:
    try:
        return Keys.parse(value.strip())
    except ValueError:
        raise InvalidValue("not a valid hex or nsec private key") from None


def pubkey(value: str) -> str:
    try:
        return parse_pubkey(value.strip())
    except ValueError:
        raise InvalidValue(f"not a valid hex or npub pubkey: {value!r}") from None


def executable(value: str) -> str:
    found = shutil.which(value)
    if found is None:
        raise InvalidValue(f"executable not found: {value!r}")
    return os.path.abspath(found)


def relay_url(value: str) -> str:
    for old, new in (("http://", "ws://"), ("https://", "wss://")):
        if value.startswith(old):
            return new + value[len(old) :]
    if not value.startswith(("ws://", "wss://")):
        raise InvalidValue(f"expected a ws://, wss://, http:// or https:// URL, got {value!r}")
    return value


def directory(value: str) -> str:
    if not Path(value).is_dir():
        raise InvalidValue(f"not a directory: {value!r}")
    return os.path.abspath(value)


def _choice(
    variable: str, default: Word, allowed: tuple[Word, ...], tidy: Callable[[str], str] = strip
) -> Setting[Word]:
    """A word among `allowed`, listed in `--help` as `a | b` and in errors as `a or b`."""
    return Setting(
        variable, choice(*allowed, listing="or"), default, " | ".join(allowed), tidy=tidy
    )


RELAY_URL = Setting(
    "BUZZ_RELAY_URL",
    relay_url,
    "ws://localhost:3000",
    "relay URL (http/https map to ws/wss)",
    tidy=strip,
)
PRIVATE_KEY = Setting(
    "BUZZ_PRIVATE_KEY",
    private_key,
    help="agent identity, hex or nsec (use the environment)",
    aliases=("BUZZ_ACP_PRIVATE_KEY",),
    empty_is_unset=True,
    required="required (64 hex characters or nsec1...)",
)
AGENT_COMMAND = Setting("BUZZ_ACP_AGENT_COMMAND", executable, "buzz-agent", "agent executable")
AGENT_ARGS = Setting("BUZZ_ACP_AGENT_ARGS", comma_list, "", "comma-separated agent arguments")
MCP_COMMAND = Setting(
    "BUZZ_ACP_MCP_COMMAND",
    lambda value: None if value == "none" else executable(value),
    "buzz-dev-mcp",
    "MCP tool server, or `none`",
    tidy=strip,
)
MCP_ARGS = Setting("BUZZ_ACP_MCP_ARGS", comma_list, "", "comma-separated MCP server arguments")
CHANNELS = Setting(
    "BUZZ_ACP_CHANNELS",
    lambda value: tuple(channel.lower() for channel in comma_list(value)),
    "",
    "comma-separated channel UUIDs (empty = all member channels)",
)
SUBSCRIBE: Setting[Subscribe] = _choice("BUZZ_ACP_SUBSCRIBE", "mentions", ("mentions", "all"))
RESPOND_TO: Setting[RespondTo] = _choice(
    "BUZZ_ACP_RESPOND_TO", "anyone", ("anyone", "owner-only", "allowlist", "nobody")
)
AGENT_OWNER = Setting("BUZZ_ACP_AGENT_OWNER", pubkey, None, "owner pubkey", empty_is_unset=True)
ALLOWLIST = Setting(
    "BUZZ_ACP_RESPOND_TO_ALLOWLIST",
    lambda value: frozenset(pubkey(item) for item in comma_list(value)),
    "",
    "comma-separated pubkeys for allowlist",
)
AGENTS = Setting("BUZZ_ACP_AGENTS", integer(1, 32), "1", "agent pool size, 1-32")
SYSTEM_PROMPT = Setting("BUZZ_ACP_SYSTEM_PROMPT", text, None, "persona prompt text")
SYSTEM_PROMPT_FILE = Setting("BUZZ_ACP_SYSTEM_PROMPT_FILE", text_file, None, "persona prompt file")
NO_BASE_PROMPT = Setting("BUZZ_ACP_NO_BASE_PROMPT", boolean, "false", "drop the base prompt")
BASE_PROMPT_FILE = Setting(
    "BUZZ_ACP_BASE_PROMPT_FILE", text_file, None, "replace the built-in base prompt"
)
NO_MEMORY = Setting("BUZZ_ACP_NO_MEMORY", boolean, "false", "do not append the `core` memory")
CONTEXT_MESSAGE_LIMIT = Setting(
    "BUZZ_ACP_CONTEXT_MESSAGE_LIMIT", integer(0, 100), "12", "thread history in prompts, 0-100"
)
BATCH_WINDOW_MS = Setting(
    "BUZZ_ACP_BATCH_WINDOW_MS", integer(0, 10000), "1000", "batch window, 0-10000 ms"
)
MAX_BATCH = Setting("BUZZ_ACP_MAX_BATCH", integer(1, 10000), "50", "maximum events per prompt")
MAX_QUEUE = Setting("BUZZ_ACP_MAX_QUEUE", integer(1, 1_000_000), "1000", "per-channel queue cap")
IDLE_TIMEOUT = Setting(
    "BUZZ_ACP_IDLE_TIMEOUT",
    integer(1, 7 * 86400),
    "900",
    "idle timeout per turn, seconds",
    ("BUZZ_ACP_TURN_TIMEOUT",),
)
MIN_TURN_DURATION_SECONDS = 10
MAX_TURN_DURATION = Setting(
    "BUZZ_ACP_MAX_TURN_DURATION",
    integer(MIN_TURN_DURATION_SECONDS, 7 * 86400),
    "7200",
    "absolute cap per turn, seconds",
)
MAX_RETRIES = Setting("BUZZ_ACP_MAX_RETRIES", integer(0, 100), "2", "retries of a failed turn")
MAX_TURNS_PER_SESSION = Setting(
    "BUZZ_ACP_MAX_TURNS_PER_SESSION",
    integer(0, 1_000_000),
    "0",
    "rotate sessions after n turns (0 = never)",
)
REPLAY_SECS = Setting(
    "BUZZ_ACP_REPLAY_SECS",
    integer(0, 10 * 365 * 86400),
    "0",
    "also wake on events this much older than start",
)
FAILURE_NOTICES = Setting(
    "BUZZ_ACP_FAILURE_NOTICES", boolean, "true", "post a notice when a turn finally fails"
)
CWD = Setting(
    "BUZZ_ACP_CWD", directory, None, "working directory for sessions", empty_is_unset=True
)
EVENT_LOG = Setting(
    "BUZZ_ACP_EVENT_LOG",
    text,
    None,
    "JSON-lines event log path (default stdout)",
    empty_is_unset=True,
)
PROMPT_LOG = Setting(
    "BUZZ_ACP_PROMPT_LOG",
    text,
    None,
    "JSON-lines log of every composed prompt",
    empty_is_unset=True,
)
LOG_LEVEL = _choice("BUZZ_ACP_LOG_LEVEL", "info", ("debug", "info", "warning", "error"), fold)
CONNECT_TIMEOUT = Setting(
    "BUZZ_ACP_CONNECT_TIMEOUT", integer(1, 86400), "60", "relay connect timeout, seconds"
)
HEARTBEAT_SECS = Setting(
    "BUZZ_ACP_HEARTBEAT_SECS", integer(1, 3600), "30", "agent heartbeat interval, seconds"
)
OPTIONS: tuple[Setting[Any], ...] = (
    RELAY_URL,
    PRIVATE_KEY,
    AGENT_COMMAND,
    AGENT_ARGS,
    MCP_COMMAND,
    MCP_ARGS,
    CHANNELS,
    SUBSCRIBE,
    RESPOND_TO,
    AGENT_OWNER,
    ALLOWLIST,
    AGENTS,
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_FILE,
    NO_BASE_PROMPT,
    BASE_PROMPT_FILE,
    NO_MEMORY,
    CONTEXT_MESSAGE_LIMIT,
    BATCH_WINDOW_MS,
    MAX_BATCH,
    MAX_QUEUE,
    IDLE_TIMEOUT,
    MAX_TURN_DURATION,
    MAX_RETRIES,
    MAX_TURNS_PER_SESSION,
    REPLAY_SECS,
    FAILURE_NOTICES,
    CWD,
    EVENT_LOG,
    PROMPT_LOG,
    LOG_LEVEL,
    CONNECT_TIMEOUT,
    HEARTBEAT_SECS,
)
IGNORED_VARIABLES = (
    "BUZZ_ACP_MULTIPLE_EVENT_HANDLING",
    "BUZZ_ACP_DEDUP",
    "BUZZ_ACP_KINDS",
    "BUZZ_ACP_NO_MENTION_FILTER",
    "BUZZ_ACP_PERMISSION_MODE",
    "BUZZ_ACP_MODEL",
    "BUZZ_ACP_EFFORT_LEVEL",
    "BUZZ_ACP_TURN_LIVENESS_SECS",
    "BUZZ_ACP_RELAY_OBSERVER",
    "BUZZ_ACP_TEAM_INSTRUCTIONS",
    "BUZZ_AUTH_TAG",
    "NOSTR_PRIVATE_KEY",
    "RUST_LOG",
    "NO_COLOR",
)


def flag_of(setting: Setting[Any]) -> str:
    """`BUZZ_ACP_IDLE_TIMEOUT` → `--idle-timeout`; `BUZZ_RELAY_URL` → `--relay-url` (§1.1)."""
    prefix = "BUZZ_ACP_" if setting.variable.startswith("BUZZ_ACP_") else "BUZZ_"
    return "--" + setting.variable.removeprefix(prefix).lower().replace("_", "-")


def parse_flags(argv: Sequence[str]) -> dict[str, str]:
    """`--idle-timeout 900` or `--idle-timeout=900` → {"BUZZ_ACP_IDLE_TIMEOUT": "900"}."""
    by_flag = {flag_of(setting): setting.variable for setting in OPTIONS}
    values: dict[str, str] = {}
    items = list(argv)
    while items:
        item = items.pop(0)
        flag, eq, inline = item.partition("=")
        if flag not in by_flag:
            raise SettingError(None, f"unknown argument {item!r} (see buzz-acp --help)")
        if eq:
            values[by_flag[flag]] = inline
        elif items:
            values[by_flag[flag]] = items.pop(0)
        else:
            raise SettingError(flag, "missing value")
    return values


def help_text() -> str:
    lines = [
        "usage: buzz-acp [--option value ...]",
        "",
        "Every option is an environment variable; a flag overrides it.",
        "",
    ]
    for setting in OPTIONS:
        default = "" if setting.default is None else f" (default: {setting.default!r})"
        lines.append(f"  {flag_of(setting):<32} {setting.variable}: {setting.help}{default}")
    return "\n".join(lines)
