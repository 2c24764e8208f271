"""ACP event-log state, accounting and secret redaction (orchestrator.md §7.10, §7.14, §7.15)."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from documents_support import log_record

from orchestra.documents.trial import SecretScan
from orchestra.nostr.keys import Keys
from orchestra.trial.accounting import trial_accounting
from orchestra.trial.eventlog import AgentLogState, EventLogFollower
from orchestra.trial.redact import redact_tree, secret_strings


@dataclass
class Price:
    input_per_million_usd: float = 1.0
    cached_input_per_million_usd: float = 0.1
    output_per_million_usd: float = 10.0
    cache_read_rate: float = 0.0
    cache_write_per_million_usd: float | None = None


def fold(*records: dict) -> AgentLogState:
    state = AgentLogState()
    for record in records:
        state.apply(log_record(**record))
    return state


def test_turn_bookkeeping_with_retry_and_pending() -> None:
    state = fold(
        {"event": "subscribed", "channel_id": "c"},
        {"event": "event_queued", "event_id": "e1"},
        {"event": "event_queued", "event_id": "e2"},
        {"event": "event_queued", "event_id": "e3"},
        {"event": "event_ignored", "event_id": "e3"},
        {
            "event": "turn_started",
            "turn_id": "t1",
            "event_ids": ["e1"],
            "ts": "2026-11-29T10:00:00.000Z",
        },
        {"event": "turn_delivered", "turn_id": "t1", "event_ids": ["e1"]},
        {
            "event": "turn_failed",
            "turn_id": "t1",
            "will_retry": True,
            "event_ids": ["e1"],
            "ts": "2026-11-29T10:00:02.000Z",
        },
    )
    assert state.subscribed_channels == {"c"}
    assert state.in_flight == 1  # the retry is still owed
    assert state.pending == ["e2"]
    state.apply(log_record(event="turn_started", turn_id="t2", event_ids=["e1"]))
    state.apply(
        log_record(
            event="turn_completed",
            turn_id="t2",
            ts="2026-11-29T10:00:05.500Z",
            usage={"session": {"input_tokens": 100, "output_tokens": 7, "cached_input_tokens": 40}},
            session_id="s1",
        )
    )
    assert state.in_flight == 0 and state.ends == 2 and state.turns_completed == 1
    assert state.active_seconds == 5.5


def test_usage_is_max_per_session_summed_over_sessions() -> None:
    state = fold(
        {
            "event": "usage",
            "session_id": "s1",
            "input_tokens": 50,
            "output_tokens": 5,
            "cached_input_tokens": 10,
        },
        {
            "event": "usage",
            "session_id": "s1",
            "input_tokens": 120,
            "output_tokens": 9,
            "cached_input_tokens": 20,
        },
        {
            "event": "usage",
            "session_id": "s2",
            "input_tokens": 30,
            "output_tokens": 1,
            "cached_input_tokens": 0,
        },
    )
    assert state.usage_totals() == (150, 20, 10, True)


def test_accounting_modes_and_cost() -> None:
    used = fold(
        {"event": "turn_started"},
        {
            "event": "usage",
            "session_id": "s",
            "input_tokens": 1_000_000,
            "output_tokens": 100_000,
            "cached_input_tokens": 0,
        },
    )
    silent = fold({"event": "turn_started"}, {"event": "turn_completed"})
    result = trial_accounting({"a-1": used}, {"a-1": Price()})
    assert result.accounting == "event_log"
    assert result.cost_usd == 1.0 + 1.0
    assert result.tokens is not None and result.tokens.per_agent["a-1"].input == 1_000_000
    mixed = trial_accounting({"a-1": used, "b-1": silent}, {"a-1": Price(), "b-1": Price()})
    assert mixed.accounting == "unreconciled"
    none = trial_accounting({"b-1": silent}, {"b-1": Price()})
    assert (none.accounting, none.tokens, none.cost_usd) == ("unavailable", None, None)


def test_cache_writes_are_priced_apart_from_plain_input() -> None:
    """Anthropic's counts: 1 M input of which 0.2 M read from and 0.4 M written to the cache."""
    state = fold(
        {
            "event": "usage",
            "session_id": "s",
            "input_tokens": 1_000_000,
            "output_tokens": 0,
            "cached_input_tokens": 200_000,
            "cache_write_input_tokens": 400_000,
        }
    )
    default = trial_accounting({"a": state}, {"a": Price()})
    assert default.cost_usd == pytest.approx(0.4 * 1.0 + 0.2 * 0.1 + 0.4 * 1.25)
    assert default.tokens is not None and default.tokens.cache_write_input == 400_000
    assert default.tokens.per_agent["a"].cache_write_input == 400_000
    priced = trial_accounting({"a": state}, {"a": Price(cache_write_per_million_usd=2.0)})
    assert priced.cost_usd == pytest.approx(0.4 * 1.0 + 0.2 * 0.1 + 0.4 * 2.0)


def test_cache_read_rate_estimate() -> None:
    state = fold({"event": "usage", "session_id": "s", "input_tokens": 1000, "output_tokens": 0})
    result = trial_accounting({"a": state}, {"a": Price(cache_read_rate=0.5)})
    assert result.cached_estimated is True
    assert result.tokens is not None and result.tokens.cached_input == 500


def test_follower_waits_for_complete_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.events.jsonl"
    bad: list[str] = []
    follower = EventLogFollower(log, on_change=lambda: None, on_bad_line=bad.append)
    assert follower.read_available() is False
    with log.open("w") as handle:
        handle.write(json.dumps({"event": "subscribed", "channel_id": "c"}) + "\nnot json\n")
        handle.write('{"event": "turn_sta')
    assert follower.read_available() is True
    assert follower.state.subscribed_channels == {"c"} and bad == ["not json"]
    assert follower.state.starts == 0
    with log.open("a") as handle:
        handle.write('rted"}\n')
    assert follower.read_available() is True and follower.state.starts == 1


def test_redaction_of_hex_nsec_and_api_keys(tmp_path: Path) -> None:
    keys = Keys.generate()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.log").write_text(f"key={keys.secret_hex} nsec={keys.nsec} x")
    (tmp_path / "b.json").write_text('{"api": "sk-live-123"}')
    (tmp_path / "clean.txt").write_text("nothing")
    scan = redact_tree(tmp_path, secret_strings([keys], ["sk-live-123", ""]))
    assert scan == SecretScan(redactions=3, files=["b.json", "sub/a.log"])
    assert (tmp_path / "sub" / "a.log").read_text() == "key=[REDACTED] nsec=[REDACTED] x"
