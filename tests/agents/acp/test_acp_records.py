"""The event-log records (agent-harness.md §1.11): one definition for the writer (`EventLog`)
and the reader (`read_record`), the lines as the contract writes them."""

import io
import json
import re
import typing

import pytest
from pydantic import ValidationError

from orchestra.agents.acp.acp_client import LLM_RETRY_METHOD, BridgeClient, TurnTracker
from orchestra.agents.acp.eventlog import EventLog
from orchestra.agents.acp.records import (
    AnyRecord,
    LlmRetry,
    MalformedRecord,
    Startup,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    TurnUsage,
    read_record,
)
from orchestra.paths import PROJECT_ROOT

SPEC = PROJECT_ROOT / "docs" / "reference" / "agent-harness.md"
PUBKEY = "ab" * 32


def spec_record_names() -> set[str]:
    text = SPEC.read_text(encoding="utf-8")
    section = text[text.index("### 1.11 ") : text.index("Invariants a consumer may rely on")]
    table = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
    return set(table) - {"event"}  # the header row names the column


def union_members() -> list[type]:
    union, _discriminator = typing.get_args(AnyRecord)
    return list(typing.get_args(union))


def test_every_record_the_contract_names_has_one_model() -> None:
    names = [member.model_fields["event"].default for member in union_members()]
    assert len(names) == len(set(names))
    assert set(names) == spec_record_names()


def lines_of(*records: object) -> list[dict]:
    stream = io.StringIO()
    log = EventLog(stream, PUBKEY)
    for record in records:
        log.emit(record)  # type: ignore[arg-type]
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_line_is_common_fields_then_the_records_own_in_order_none_omitted() -> None:
    stream = io.StringIO()
    EventLog(stream, PUBKEY).emit(
        TurnFailed(turn_id="t1", channel_id="c", error="boom", will_retry=False, event_ids=["e"])
    )
    line = stream.getvalue()
    assert line.endswith("}\n") and line.count("\n") == 1
    record = json.loads(line)
    assert list(record) == [
        "ts", "seq", "event", "agent_pubkey", "turn_id", "channel_id", "error", "will_retry",
        "event_ids",
    ]  # fmt: skip
    assert record["seq"] == 1 and record["event"] == "turn_failed"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["ts"])


def test_nullable_fields_are_written_as_null_and_numbers_keep_their_type() -> None:
    startup, failed = lines_of(
        Startup(version="0.1.0", channels=None, memory=False),
        TurnFailed(turn_id="t", retry_in_s=5, duration_ms=12),
    )
    assert startup["channels"] is None and startup["memory"] is False
    assert "relay_url" not in startup
    assert failed["retry_in_s"] == 5 and isinstance(failed["retry_in_s"], int)
    assert [r["seq"] for r in (startup, failed)] == [1, 2]


def test_nested_usage_is_written_in_contract_order() -> None:
    counters = {
        "input_tokens": 10, "output_tokens": 2, "cached_input_tokens": 0,
        "cache_write_input_tokens": 0, "reasoning_tokens": 0, "llm_calls": 1,
    }  # fmt: skip
    usage = TurnUsage.model_validate({"turn": counters, "session": counters})
    [line] = lines_of(TurnCompleted(turn_id="t", stop_reason="end_turn", usage=usage))
    assert line["usage"] == {"turn": counters, "session": counters}
    assert list(line["usage"]["turn"]) == list(counters)


def test_a_misspelt_field_is_an_error_where_the_record_is_built() -> None:
    with pytest.raises(ValidationError, match="turn_idd"):
        TurnStarted(turn_idd="t1")  # type: ignore[call-arg]


def test_reader_takes_what_the_writer_wrote() -> None:
    stream = io.StringIO()
    EventLog(stream, PUBKEY).emit(TurnStarted(turn_id="t1", event_ids=["a", "b"], attempt=2))
    record = read_record(stream.getvalue().strip())
    assert isinstance(record, TurnStarted)
    assert record.event_ids == ["a", "b"] and record.attempt == 2 and record.agent_pubkey == PUBKEY


async def test_an_agents_retry_notification_becomes_an_llm_retry_record() -> None:
    """buzz-agent's `_buzz/llm_retry` notification → one `llm_retry` line of the running turn,
    read back as the progress words it; a malformed one is ignored, not a crash."""
    stream = io.StringIO()
    client = BridgeClient(EventLog(stream, PUBKEY), lambda _session, _usage: None)
    client.turns["ses_1"] = TurnTracker(turn_id="t1", channel_id="c1", session_id="ses_1")
    params = {"failureClass": "server_error", "retriesUsed": 2, "retryBudget": 4, "retryInS": 2.1}
    await client.ext_notification(
        LLM_RETRY_METHOD, {"sessionId": "ses_1", "httpStatus": 500, **params}
    )
    await client.ext_notification(LLM_RETRY_METHOD, {"sessionId": "ses_1", "retriesUsed": "x"})
    (line,) = stream.getvalue().splitlines()
    record = read_record(line)
    assert isinstance(record, LlmRetry)
    assert (record.turn_id, record.channel_id, record.retry_in_s) == ("t1", "c1", 2.1)
    assert record.describe() == "provider HTTP 500, 2/4"
    no_answer = LlmRetry(failure_class="server_error", retries_used=1, retry_budget=4)
    assert no_answer.describe() == "provider server_error, 1/4"  # e.g. a network failure


def test_reader_ignores_unknown_names_and_fields() -> None:
    assert read_record('{"event": "future_record", "x": 1}') is None
    assert read_record('{"no_event": true}') is None
    record = read_record('{"event": "subscribed", "channel_id": "c", "new_field": [1, 2]}')
    assert record is not None and record.channel_id == "c"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "line",
    ["not json", "[1, 2]", '"text"', '{"event": "turn_started", "event_ids": "e1"}'],
)
def test_reader_reports_what_is_not_a_record(line: str) -> None:
    with pytest.raises(MalformedRecord):
        read_record(line)
