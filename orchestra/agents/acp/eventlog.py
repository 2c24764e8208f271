"""The JSON-lines event log (agent-harness.md §1.11) and the optional prompt log.

Record names and fields are a contract read by Buzz Orchestra, defined once in `records`.
Every line is flushed as it is written; nothing else ever goes to stdout.
"""

from __future__ import annotations

import json
import sys
import time
from typing import IO, Any

from orchestra.agents.acp.records import Record


def rfc3339_ms(seconds: float | None = None) -> str:
    now = time.time() if seconds is None else seconds
    whole = int(now)
    millis = int((now - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def rfc3339_s(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def open_log(path: str | None) -> IO[str]:
    if path is None:
        return sys.stdout
    return open(path, "a", encoding="utf-8")  # lives as long as the process


class EventLog:
    def __init__(self, stream: IO[str], agent_pubkey: str | None) -> None:
        self._stream = stream
        self._agent_pubkey = agent_pubkey
        self._seq = 0

    def emit(self, record: Record) -> None:
        """One line: the common fields, then the record's own (None omitted unless NULLABLE)."""
        self._seq += 1
        line: dict[str, Any] = {"ts": rfc3339_ms(), "seq": self._seq, "event": record.event}
        if self._agent_pubkey is not None:  # unknown only when the key itself is invalid
            line["agent_pubkey"] = self._agent_pubkey
        line.update(record.payload())
        self._stream.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._stream.flush()


class PromptLog:
    """`{ts, turn_id, channel_id, session_id, kind: "system"|"prompt", text}` per prompt."""

    def __init__(self, stream: IO[str] | None) -> None:
        self._stream = stream

    def write(self, kind: str, text: str, **ids: str | None) -> None:
        if self._stream is None:
            return
        record = {"ts": rfc3339_ms(), **ids, "kind": kind, "text": text}
        self._stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._stream.flush()
