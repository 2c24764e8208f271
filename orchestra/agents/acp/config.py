"""buzz-acp configuration (agent-harness.md §1.1): environment variables, each also a flag."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchestra.nostr.keys import Keys, parse_pubkey

MAX_PROMPT_FILE_BYTES = 1024 * 1024
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})

Subscribe = Literal["mentions", "all"]
RespondTo = Literal["anyone", "owner-only", "allowlist", "nobody"]
BasePromptSource = Literal["builtin", "file", "none"]


class ConfigError(ValueError):
    """One-line startup error naming the variable and the value."""


@dataclass(frozen=True)
class Option:
    env: str
    default: str | None
    help: str
    aliases: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        prefix = "BUZZ_ACP_" if self.env.startswith("BUZZ_ACP_") else "BUZZ_"
        return "--" + self.env.removeprefix(prefix).lower().replace("_", "-")


OPTIONS: tuple[Option, ...] = (
    Option("BUZZ_RELAY_URL", "ws://localhost:3000", "relay URL (http/https map to ws/wss)"),
    Option(
        "BUZZ_PRIVATE_KEY",
        None,
        "agent identity, hex or nsec (use the environment)",
        ("BUZZ_ACP_PRIVATE_KEY",),
    ),
    Option("BUZZ_ACP_AGENT_COMMAND", "buzz-agent", "agent executable"),
    Option("BUZZ_ACP_AGENT_ARGS", "", "comma-separated agent arguments"),
    Option("BUZZ_ACP_MCP_COMMAND", "buzz-dev-mcp", "MCP tool server, or `none`"),
    Option("BUZZ_ACP_MCP_ARGS", "", "comma-separated MCP server arguments"),
    Option("BUZZ_ACP_CHANNELS", "", "comma-separated channel UUIDs (empty = all member channels)"),
    Option("BUZZ_ACP_SUBSCRIBE", "mentions", "mentions | all"),
    Option("BUZZ_ACP_RESPOND_TO", "anyone", "anyone | owner-only | allowlist | nobody"),
    Option("BUZZ_ACP_AGENT_OWNER", None, "owner pubkey"),
    Option("BUZZ_ACP_RESPOND_TO_ALLOWLIST", "", "comma-separated pubkeys for allowlist"),
    Option("BUZZ_ACP_AGENTS", "1", "agent pool size, 1-32"),
    Option("BUZZ_ACP_SYSTEM_PROMPT", None, "persona prompt text"),
    Option("BUZZ_ACP_SYSTEM_PROMPT_FILE", None, "persona prompt file"),
    Option("BUZZ_ACP_NO_BASE_PROMPT", "false", "drop the base prompt"),
    Option("BUZZ_ACP_BASE_PROMPT_FILE", None, "replace the built-in base prompt"),
    Option("BUZZ_ACP_NO_MEMORY", "false", "do not append the `core` memory"),
    Option("BUZZ_ACP_CONTEXT_MESSAGE_LIMIT", "12", "thread history in prompts, 0-100"),
    Option("BUZZ_ACP_BATCH_WINDOW_MS", "1000", "batch window, 0-10000 ms"),
    Option("BUZZ_ACP_MAX_BATCH", "50", "maximum events per prompt"),
    Option("BUZZ_ACP_MAX_QUEUE", "1000", "per-channel queue cap"),
    Option(
        "BUZZ_ACP_IDLE_TIMEOUT", "900", "idle timeout per turn, seconds", ("BUZZ_ACP_TURN_TIMEOUT",)
    ),
    Option("BUZZ_ACP_MAX_TURN_DURATION", "7200", "absolute cap per turn, seconds"),
    Option("BUZZ_ACP_MAX_RETRIES", "2", "retries of a failed turn"),
    Option("BUZZ_ACP_MAX_TURNS_PER_SESSION", "0", "rotate sessions after n turns (0 = never)"),
    Option("BUZZ_ACP_REPLAY_SECS", "0", "also wake on events this much older than start"),
    Option("BUZZ_ACP_FAILURE_NOTICES", "true", "post a notice when a turn finally fails"),
    Option("BUZZ_ACP_CWD", None, "working directory for sessions"),
    Option("BUZZ_ACP_EVENT_LOG", None, "JSON-lines event log path (default stdout)"),
    Option("BUZZ_ACP_PROMPT_LOG", None, "JSON-lines log of every composed prompt"),
    Option("BUZZ_ACP_LOG_LEVEL", "info", "debug | info | warning | error"),
    Option("BUZZ_ACP_CONNECT_TIMEOUT", "60", "relay connect timeout, seconds"),
    Option("BUZZ_ACP_HEARTBEAT_SECS", "30", "agent heartbeat interval, seconds"),
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


class AcpConfig(BaseModel):
    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, arbitrary_types_allowed=True
    )

    relay_url: str
    keys: Keys
    agent_command: str
    agent_args: tuple[str, ...]
    mcp_command: str | None
    mcp_args: tuple[str, ...]
    channels: tuple[str, ...]
    subscribe: Subscribe
    respond_to: RespondTo
    owner: str | None
    allowlist: frozenset[str]
    pool_size: int
    persona: str
    base_prompt: str
    base_prompt_source: BasePromptSource
    memory: bool
    context_message_limit: int
    batch_window_s: float
    max_batch: int
    max_queue: int
    idle_timeout_s: int
    max_turn_duration_s: int
    max_retries: int
    max_turns_per_session: int
    replay_secs: int
    failure_notices: bool
    cwd: str
    event_log: str | None
    prompt_log: str | None
    log_level: str
    connect_timeout_s: int
    heartbeat_secs: int
    ignored_set: tuple[str, ...]


def parse_bool(name: str, value: str) -> bool:
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ConfigError(
        f"{name}: expected a boolean (1/0, true/false, yes/no, on/off), got {value!r}"
    )


def parse_int(name: str, value: str, low: int, high: int) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise ConfigError(f"{name}: expected an integer, got {value!r}") from None
    if not low <= number <= high:
        raise ConfigError(f"{name}: must be between {low} and {high}, got {number}")
    return number


def split_list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def parse_flags(argv: Sequence[str]) -> dict[str, str]:
    """`--idle-timeout 900` or `--idle-timeout=900` → {"BUZZ_ACP_IDLE_TIMEOUT": "900"}."""
    by_flag = {option.flag: option.env for option in OPTIONS}
    values: dict[str, str] = {}
    items = list(argv)
    while items:
        item = items.pop(0)
        flag, eq, inline = item.partition("=")
        if flag not in by_flag:
            raise ConfigError(f"unknown argument {item!r} (see buzz-acp --help)")
        if eq:
            values[by_flag[flag]] = inline
        elif items:
            values[by_flag[flag]] = items.pop(0)
        else:
            raise ConfigError(f"{flag}: missing value")
    return values


def help_text() -> str:
    lines = [
        "usage: buzz-acp [--option value ...]",
        "",
        "Every option is an environment variable; a flag overrides it.",
        "",
    ]
    for option in OPTIONS:
        default = "" if option.default is None else f" (default: {option.default!r})"
        lines.append(f"  {option.flag:<32} {option.env}: {option.help}{default}")
    return "\n".join(lines)


def resolve_executable(name: str, value: str) -> str:
    found = shutil.which(value)
    if found is None:
        raise ConfigError(f"{name}: executable not found: {value!r}")
    return os.path.abspath(found)


def read_prompt_file(name: str, value: str) -> str:
    path = Path(value)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{name}: cannot read {value!r}: {error.strerror}") from None
    if len(data) > MAX_PROMPT_FILE_BYTES:
        raise ConfigError(f"{name}: {value!r} is larger than 1 MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{name}: {value!r} is not UTF-8") from None


def builtin_base_prompt() -> str:
    from importlib import resources

    return resources.files("orchestra.agents").joinpath("base_prompt.md").read_text("utf-8")


def normalize_relay_url(value: str) -> str:
    for old, new in (("http://", "ws://"), ("https://", "wss://")):
        if value.startswith(old):
            return new + value[len(old) :]
    if not value.startswith(("ws://", "wss://")):
        raise ConfigError(
            f"BUZZ_RELAY_URL: expected a ws://, wss://, http:// or https:// URL, got {value!r}"
        )
    return value


def load_config(environ: Mapping[str, str], argv: Sequence[str] = ()) -> AcpConfig:
    """Raises ConfigError with a one-line message naming the variable and value."""
    values = {**environ, **parse_flags(argv)}

    def get(env: str) -> str | None:
        option = next(o for o in OPTIONS if o.env == env)
        for key in (env, *option.aliases):
            if key in values:
                return values[key]
        return option.default

    def need(env: str) -> str:
        value = get(env)
        assert value is not None
        return value

    secret = get("BUZZ_PRIVATE_KEY")
    if not secret:
        raise ConfigError("BUZZ_PRIVATE_KEY: required (64 hex characters or nsec1...)")
    try:
        keys = Keys.parse(secret.strip())
    except ValueError:
        raise ConfigError("BUZZ_PRIVATE_KEY: not a valid hex or nsec private key") from None

    subscribe = need("BUZZ_ACP_SUBSCRIBE").strip()
    if subscribe not in ("mentions", "all"):
        raise ConfigError(f"BUZZ_ACP_SUBSCRIBE: expected mentions or all, got {subscribe!r}")
    respond_to = need("BUZZ_ACP_RESPOND_TO").strip()
    if respond_to not in ("anyone", "owner-only", "allowlist", "nobody"):
        raise ConfigError(
            "BUZZ_ACP_RESPOND_TO: expected anyone, owner-only, allowlist or nobody, "
            f"got {respond_to!r}"
        )
    owner = _pubkey("BUZZ_ACP_AGENT_OWNER", get("BUZZ_ACP_AGENT_OWNER") or None)
    allowlist = frozenset(
        _pubkey("BUZZ_ACP_RESPOND_TO_ALLOWLIST", item) or ""
        for item in split_list(need("BUZZ_ACP_RESPOND_TO_ALLOWLIST"))
    )
    channels = tuple(c.lower() for c in split_list(need("BUZZ_ACP_CHANNELS")))

    if get("BUZZ_ACP_SYSTEM_PROMPT") is not None and get("BUZZ_ACP_SYSTEM_PROMPT_FILE") is not None:
        raise ConfigError("BUZZ_ACP_SYSTEM_PROMPT and BUZZ_ACP_SYSTEM_PROMPT_FILE are both set")
    persona_file = get("BUZZ_ACP_SYSTEM_PROMPT_FILE")
    persona = (
        read_prompt_file("BUZZ_ACP_SYSTEM_PROMPT_FILE", persona_file)
        if persona_file is not None
        else get("BUZZ_ACP_SYSTEM_PROMPT") or ""
    )
    base_file = get("BUZZ_ACP_BASE_PROMPT_FILE")
    source: BasePromptSource
    if parse_bool("BUZZ_ACP_NO_BASE_PROMPT", need("BUZZ_ACP_NO_BASE_PROMPT")):
        base_prompt, source = "", "none"
    elif base_file is not None:
        base_prompt, source = read_prompt_file("BUZZ_ACP_BASE_PROMPT_FILE", base_file), "file"
    else:
        base_prompt, source = builtin_base_prompt(), "builtin"

    idle = parse_int("BUZZ_ACP_IDLE_TIMEOUT", need("BUZZ_ACP_IDLE_TIMEOUT"), 1, 7 * 86400)
    max_turn = parse_int(
        "BUZZ_ACP_MAX_TURN_DURATION", need("BUZZ_ACP_MAX_TURN_DURATION"), 10, 7 * 86400
    )
    if idle >= max_turn:
        raise ConfigError(
            f"BUZZ_ACP_IDLE_TIMEOUT ({idle}) must be less than BUZZ_ACP_MAX_TURN_DURATION ({max_turn})"
        )
    log_level = need("BUZZ_ACP_LOG_LEVEL").strip().lower()
    if log_level not in ("debug", "info", "warning", "error"):
        raise ConfigError(
            f"BUZZ_ACP_LOG_LEVEL: expected debug, info, warning or error, got {log_level!r}"
        )
    mcp = need("BUZZ_ACP_MCP_COMMAND").strip()
    cwd = get("BUZZ_ACP_CWD") or os.getcwd()
    if not Path(cwd).is_dir():
        raise ConfigError(f"BUZZ_ACP_CWD: not a directory: {cwd!r}")
    return AcpConfig(
        relay_url=normalize_relay_url(need("BUZZ_RELAY_URL").strip()),
        keys=keys,
        agent_command=resolve_executable("BUZZ_ACP_AGENT_COMMAND", need("BUZZ_ACP_AGENT_COMMAND")),
        agent_args=split_list(need("BUZZ_ACP_AGENT_ARGS")),
        mcp_command=None if mcp == "none" else resolve_executable("BUZZ_ACP_MCP_COMMAND", mcp),
        mcp_args=split_list(need("BUZZ_ACP_MCP_ARGS")),
        channels=channels,
        subscribe=subscribe,  # type: ignore[arg-type]
        respond_to=respond_to,  # type: ignore[arg-type]
        owner=owner,
        allowlist=allowlist,
        pool_size=parse_int("BUZZ_ACP_AGENTS", need("BUZZ_ACP_AGENTS"), 1, 32),
        persona=persona,
        base_prompt=base_prompt,
        base_prompt_source=source,
        memory=not parse_bool("BUZZ_ACP_NO_MEMORY", need("BUZZ_ACP_NO_MEMORY")),
        context_message_limit=parse_int(
            "BUZZ_ACP_CONTEXT_MESSAGE_LIMIT", need("BUZZ_ACP_CONTEXT_MESSAGE_LIMIT"), 0, 100
        ),
        batch_window_s=parse_int(
            "BUZZ_ACP_BATCH_WINDOW_MS", need("BUZZ_ACP_BATCH_WINDOW_MS"), 0, 10000
        )
        / 1000,
        max_batch=parse_int("BUZZ_ACP_MAX_BATCH", need("BUZZ_ACP_MAX_BATCH"), 1, 10000),
        max_queue=parse_int("BUZZ_ACP_MAX_QUEUE", need("BUZZ_ACP_MAX_QUEUE"), 1, 1_000_000),
        idle_timeout_s=idle,
        max_turn_duration_s=max_turn,
        max_retries=parse_int("BUZZ_ACP_MAX_RETRIES", need("BUZZ_ACP_MAX_RETRIES"), 0, 100),
        max_turns_per_session=parse_int(
            "BUZZ_ACP_MAX_TURNS_PER_SESSION", need("BUZZ_ACP_MAX_TURNS_PER_SESSION"), 0, 1_000_000
        ),
        replay_secs=parse_int(
            "BUZZ_ACP_REPLAY_SECS", need("BUZZ_ACP_REPLAY_SECS"), 0, 10 * 365 * 86400
        ),
        failure_notices=parse_bool("BUZZ_ACP_FAILURE_NOTICES", need("BUZZ_ACP_FAILURE_NOTICES")),
        cwd=os.path.abspath(cwd),
        event_log=get("BUZZ_ACP_EVENT_LOG") or None,
        prompt_log=get("BUZZ_ACP_PROMPT_LOG") or None,
        log_level=log_level,
        connect_timeout_s=parse_int(
            "BUZZ_ACP_CONNECT_TIMEOUT", need("BUZZ_ACP_CONNECT_TIMEOUT"), 1, 86400
        ),
        heartbeat_secs=parse_int(
            "BUZZ_ACP_HEARTBEAT_SECS", need("BUZZ_ACP_HEARTBEAT_SECS"), 1, 3600
        ),
        ignored_set=tuple(name for name in IGNORED_VARIABLES if name in environ),
    )


def _pubkey(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return parse_pubkey(value.strip())
    except ValueError:
        raise ConfigError(f"{name}: not a valid hex or npub pubkey: {value!r}") from None
