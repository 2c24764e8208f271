"""buzz-acp pure parts: configuration, wake rule rows (§1.4), queueing (§1.5)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from orchestra.agents.acp.config import AcpConfig, load_config
from orchestra.agents.acp.queues import ChannelQueues
from orchestra.agents.acp.wake import WakeRule
from orchestra.nostr.keys import Keys
from orchestra.settings import SettingError

KEYS = Keys.generate()
OWNER, FRIEND, STRANGER = (Keys.generate().pubkey for _ in range(3))
CHANNEL, OTHER_CHANNEL = (
    "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b",
    "1b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b",
)
START = 1_800_000_000


def config(**env: str) -> AcpConfig:
    base = {
        "BUZZ_PRIVATE_KEY": KEYS.secret_hex,
        "BUZZ_ACP_AGENT_COMMAND": sys.executable,
        "BUZZ_ACP_MCP_COMMAND": "none",
    }
    return load_config({**base, **env})


def message(
    n: int,
    *,
    author: str = STRANGER,
    created_at: int = START,
    p: bool = True,
    channel: str = CHANNEL,
) -> dict[str, Any]:
    tags = [["h", channel]] + ([["p", KEYS.pubkey]] if p else [])
    return {
        "id": f"{n:064x}",
        "pubkey": author,
        "created_at": created_at,
        "kind": 9,
        "tags": tags,
        "content": f"@solo-1 message {n}",
    }


def rule(**env: str) -> WakeRule:
    return WakeRule(config(**env), START, lambda channel: channel == CHANNEL)


def test_wake_rule_rows_in_order() -> None:
    wake = rule()
    assert wake.check(message(1)) is None
    assert wake.check(message(1)) == "duplicate"
    assert wake.check(message(2, created_at=START - 1)) == "before_start"
    assert wake.check(message(3, channel=OTHER_CHANNEL)) == "unsubscribed_channel"
    assert wake.check(message(4, author=KEYS.pubkey)) == "self"
    assert wake.check(message(5, p=False)) == "not_mentioned"  # plain @Name text
    assert wake.check(message(6, created_at=START)) is None  # same second as the start


def test_replay_window_and_all_mode() -> None:
    wake = rule(BUZZ_ACP_REPLAY_SECS="60", BUZZ_ACP_SUBSCRIBE="all")
    assert wake.since == START - 60
    assert wake.check(message(1, created_at=START - 60, p=False)) is None
    assert wake.check(message(2, created_at=START - 61)) == "before_start"
    assert wake.check(message(3, author=KEYS.pubkey, p=False)) == "self"


@pytest.mark.parametrize(
    ("env", "author", "reason"),
    [
        ({"BUZZ_ACP_RESPOND_TO": "owner-only", "BUZZ_ACP_AGENT_OWNER": OWNER}, OWNER, None),
        (
            {"BUZZ_ACP_RESPOND_TO": "owner-only", "BUZZ_ACP_AGENT_OWNER": OWNER},
            FRIEND,
            "author_gate",
        ),
        ({"BUZZ_ACP_RESPOND_TO": "owner-only"}, OWNER, "author_gate"),  # no owner: fail closed
        (
            {"BUZZ_ACP_RESPOND_TO": "allowlist", "BUZZ_ACP_RESPOND_TO_ALLOWLIST": FRIEND},
            FRIEND,
            None,
        ),
        ({"BUZZ_ACP_RESPOND_TO": "allowlist", "BUZZ_ACP_AGENT_OWNER": OWNER}, OWNER, None),
        (
            {"BUZZ_ACP_RESPOND_TO": "allowlist", "BUZZ_ACP_RESPOND_TO_ALLOWLIST": FRIEND},
            STRANGER,
            "author_gate",
        ),
        ({"BUZZ_ACP_RESPOND_TO": "nobody"}, OWNER, "author_gate"),
        ({}, STRANGER, None),
    ],
)
def test_author_gate(env: dict[str, str], author: str, reason: str | None) -> None:
    assert rule(**env).check(message(1, author=author)) == reason


def test_duplicate_memory_is_bounded() -> None:
    wake = rule()
    for n in range(10_001):
        wake.check(message(n))
    assert wake.check(message(10_000)) == "duplicate"
    assert wake.check(message(0)) is None  # forgotten after 10,000 newer ids


def test_batch_window_and_one_turn_per_channel() -> None:
    queues = ChannelQueues(max_queue=1000, max_batch=2, window_s=1.0)
    queues.add(CHANNEL, message(3, created_at=START + 1), now=10.0)
    queues.add(CHANNEL, message(2, created_at=START + 1), now=10.2)
    queues.add(CHANNEL, message(1, created_at=START + 2), now=10.3)
    assert queues.next_ready(10.9) is None and queues.next_deadline() == 11.0
    assert queues.next_ready(11.0) == CHANNEL
    batch = queues.take_batch(CHANNEL)
    assert [e["id"] for e in batch] == [f"{2:064x}", f"{3:064x}"]  # (created_at, id) order
    queues.in_flight.add(CHANNEL)
    assert queues.next_ready(99.0) is None and queues.next_deadline() is None
    queues.in_flight.discard(CHANNEL)
    assert queues.next_ready(99.0) == CHANNEL and queues.depth(CHANNEL) == 1


def test_oldest_waiting_channel_goes_first_and_overflow_drops_oldest() -> None:
    queues = ChannelQueues(max_queue=2, max_batch=50, window_s=0.0)
    queues.add(OTHER_CHANNEL, message(1, channel=OTHER_CHANNEL), now=1.0)
    queues.add(CHANNEL, message(2), now=2.0)
    assert queues.next_ready(3.0) == OTHER_CHANNEL
    queues.add(CHANNEL, message(3), now=3.0)
    dropped = queues.add(CHANNEL, message(4, created_at=START - 5), now=4.0)
    assert dropped is not None and dropped["id"] == f"{2:064x}"
    assert queues.drop_channel(CHANNEL) == [message(4, created_at=START - 5), message(3)]


def test_configuration_defaults_and_flags(tmp_path: Path) -> None:
    persona = tmp_path / "persona.md"
    persona.write_text("You are careful.\n")
    cfg = load_config(
        {
            "BUZZ_PRIVATE_KEY": KEYS.nsec,
            "BUZZ_ACP_AGENT_COMMAND": sys.executable,
            "BUZZ_ACP_MCP_COMMAND": "none",
            "BUZZ_ACP_SYSTEM_PROMPT_FILE": str(persona),
            "BUZZ_RELAY_URL": "https://relay.example",
            "BUZZ_ACP_NO_MEMORY": "YES",
            "BUZZ_ACP_CHANNELS": f" {CHANNEL.upper()} ,",
            "RUST_LOG": "debug",
        },
        ["--idle-timeout", "30", "--batch-window-ms=0"],
    )
    assert cfg.keys.pubkey == KEYS.pubkey and cfg.relay_url == "wss://relay.example"
    assert cfg.idle_timeout_s == 30 and cfg.batch_window_s == 0 and cfg.memory is False
    assert cfg.channels == (CHANNEL,) and cfg.persona == "You are careful.\n"
    assert cfg.base_prompt_source == "builtin" and "--reply-to" in cfg.base_prompt
    assert cfg.mcp_command is None and cfg.subscribe == "mentions" and cfg.respond_to == "anyone"
    assert cfg.pool_size == 1 and cfg.max_batch == 50 and cfg.context_message_limit == 12
    assert cfg.ignored_set == ("RUST_LOG",)
    assert KEYS.secret_hex not in repr(cfg)
    assert (
        load_config(
            {
                "BUZZ_ACP_PRIVATE_KEY": KEYS.secret_hex,
                "BUZZ_ACP_AGENT_COMMAND": sys.executable,
                "BUZZ_ACP_MCP_COMMAND": "none",
                "BUZZ_ACP_NO_BASE_PROMPT": "on",
            }
        ).base_prompt_source
        == "none"
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BUZZ_PRIVATE_KEY": ""}, "BUZZ_PRIVATE_KEY: required"),
        ({"BUZZ_PRIVATE_KEY": "zz"}, "BUZZ_PRIVATE_KEY: not a valid"),
        ({"BUZZ_ACP_NO_MEMORY": "maybe"}, "BUZZ_ACP_NO_MEMORY: expected a boolean"),
        ({"BUZZ_ACP_SUBSCRIBE": "config"}, "BUZZ_ACP_SUBSCRIBE: expected mentions or all"),
        ({"BUZZ_ACP_AGENTS": "33"}, "BUZZ_ACP_AGENTS: must be between 1 and 32"),
        ({"BUZZ_ACP_IDLE_TIMEOUT": "7200"}, "BUZZ_ACP_IDLE_TIMEOUT (7200) must be less than"),
        (
            {"BUZZ_ACP_AGENT_COMMAND": "no-such-agent-xyz"},
            "BUZZ_ACP_AGENT_COMMAND: executable not found",
        ),
        ({"BUZZ_ACP_SYSTEM_PROMPT": "a", "BUZZ_ACP_SYSTEM_PROMPT_FILE": "/x"}, "are both set"),
        (
            {"BUZZ_ACP_SYSTEM_PROMPT_FILE": "/nonexistent/p.md"},
            "BUZZ_ACP_SYSTEM_PROMPT_FILE: cannot read",
        ),
        ({"BUZZ_ACP_AGENT_OWNER": "npub1bad"}, "BUZZ_ACP_AGENT_OWNER: not a valid"),
        ({"BUZZ_RELAY_URL": "ftp://x"}, "BUZZ_RELAY_URL: expected"),
    ],
)
def test_configuration_errors_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingError) as raised:
        config(**env)
    assert str(raised.value).startswith(message) or message in str(raised.value)
    assert KEYS.secret_hex not in str(raised.value)
