"""buzz-acp configuration (agent-harness.md §1.1) read from its options."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchestra.agents.acp import options
from orchestra.agents.acp.options import RespondTo, Subscribe
from orchestra.nostr.keys import Keys
from orchestra.settings import SettingError, present

BasePromptSource = Literal["builtin", "file", "none"]


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


def builtin_base_prompt() -> str:
    from importlib import resources

    return resources.files("orchestra.agents").joinpath("base_prompt.md").read_text("utf-8")


def load_config(environ: Mapping[str, str], argv: Sequence[str] = ()) -> AcpConfig:
    """Raises SettingError with a one-line message naming the variable and value."""
    values = {**environ, **options.parse_flags(argv)}
    keys = options.PRIVATE_KEY.value(values)
    subscribe = options.SUBSCRIBE.value(values)
    respond_to = options.RESPOND_TO.value(values)
    owner = options.AGENT_OWNER.get(values)
    allowlist = options.ALLOWLIST.value(values)
    channels = options.CHANNELS.value(values)

    if (
        options.SYSTEM_PROMPT.text(values) is not None
        and options.SYSTEM_PROMPT_FILE.text(values) is not None
    ):
        raise SettingError(
            None, "BUZZ_ACP_SYSTEM_PROMPT and BUZZ_ACP_SYSTEM_PROMPT_FILE are both set"
        )
    persona = options.SYSTEM_PROMPT_FILE.get(values) or options.SYSTEM_PROMPT.get(values) or ""
    source: BasePromptSource
    if options.NO_BASE_PROMPT.value(values):
        base_prompt, source = "", "none"
    elif (base_file := options.BASE_PROMPT_FILE.get(values)) is not None:
        base_prompt, source = base_file, "file"
    else:
        base_prompt, source = builtin_base_prompt(), "builtin"

    idle = options.IDLE_TIMEOUT.value(values)
    max_turn = options.MAX_TURN_DURATION.value(values)
    if idle >= max_turn:
        raise SettingError(
            "BUZZ_ACP_IDLE_TIMEOUT",
            f"({idle}) must be less than BUZZ_ACP_MAX_TURN_DURATION ({max_turn})",
            joiner=" ",
        )
    log_level = options.LOG_LEVEL.value(values)
    cwd = options.CWD.get(values) or os.path.abspath(os.getcwd())
    return AcpConfig(
        relay_url=options.RELAY_URL.value(values),
        keys=keys,
        agent_command=options.AGENT_COMMAND.value(values),
        agent_args=options.AGENT_ARGS.value(values),
        mcp_command=options.MCP_COMMAND.get(values),
        mcp_args=options.MCP_ARGS.value(values),
        channels=channels,
        subscribe=subscribe,
        respond_to=respond_to,
        owner=owner,
        allowlist=allowlist,
        pool_size=options.AGENTS.value(values),
        persona=persona,
        base_prompt=base_prompt,
        base_prompt_source=source,
        memory=not options.NO_MEMORY.value(values),
        context_message_limit=options.CONTEXT_MESSAGE_LIMIT.value(values),
        batch_window_s=options.BATCH_WINDOW_MS.value(values) / 1000,
        max_batch=options.MAX_BATCH.value(values),
        max_queue=options.MAX_QUEUE.value(values),
        idle_timeout_s=idle,
        max_turn_duration_s=max_turn,
        max_retries=options.MAX_RETRIES.value(values),
        max_turns_per_session=options.MAX_TURNS_PER_SESSION.value(values),
        replay_secs=options.REPLAY_SECS.value(values),
        failure_notices=options.FAILURE_NOTICES.value(values),
        cwd=cwd,
        event_log=options.EVENT_LOG.get(values),
        prompt_log=options.PROMPT_LOG.get(values),
        log_level=log_level,
        connect_timeout_s=options.CONNECT_TIMEOUT.value(values),
        heartbeat_secs=options.HEARTBEAT_SECS.value(values),
        ignored_set=present(environ, options.IGNORED_VARIABLES),
    )
