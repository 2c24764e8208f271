"""The trajectory side file (agent-harness.md §2.13): one JSON object per line, appended by
buzz-agent as each step happens, read back by the orchestrator at teardown.

Each line is a single `write(2)` to a file opened with `O_APPEND`, under an exclusive `flock`:
the agent processes of one buzz-acp pool share the file and never interleave a line, and a
process killed at any moment leaves at most its own last line incomplete. A writer that opens a
file ending in such a fragment first ends it with a newline, so a restarted agent's lines are
not glued to it; the reader drops the fragment and says so.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from orchestra.agents.trajectory.atif import AgentInfo, Metrics, ToolCall


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    ts: str  # ISO 8601 UTC with microseconds and Z
    session_id: str  # the ACP session the step belongs to


class SystemLine(Line):
    """A session's system prompt as the model gets it, and the tools it is offered."""

    kind: Literal["system"] = "system"
    text: str
    agent: AgentInfo


class UserLine(Line):
    """A user message: a `session/prompt` (the Buzz events), or buzz-agent's own continuation
    after a truncated response."""

    kind: Literal["user"] = "user"
    text: str


class AgentLine(Line):
    """One LLM response: its text, reasoning, the tool calls that will run, its usage."""

    kind: Literal["agent"] = "agent"
    text: str
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Metrics
    #: the provider refused: its text is the refusal (the ATIF step's `extra.stop_reason`)
    stop_reason: Literal["refusal"] | None = None


class ToolResultLine(Line):
    """The result of one tool call, as the model receives it."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    content: str
    is_error: bool


SideLine = Annotated[
    SystemLine | UserLine | AgentLine | ToolResultLine, Field(discriminator="kind")
]
_LINE = TypeAdapter(SideLine)


def encode(line: Line) -> bytes:
    """The line's UTF-8 bytes. A lone surrogate (a provider may send one, escaped in its JSON)
    becomes U+FFFD: no UTF-8 text, and no reader of the assembled document, can hold one."""
    text = json.dumps(line.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        repaired = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return repaired.encode("utf-8") + b"\n"


class SideFileWriter:
    """Appends lines to one side file; raises OSError only when the file cannot be opened."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        with self._locked():
            size = os.fstat(self._fd).st_size
            if size and os.pread(self._fd, 1, size - 1) != b"\n":
                self._write_all(b"\n")  # end a fragment left by a killed writer

    def write(self, line: Line) -> None:
        data = encode(line)
        with self._locked():
            self._write_all(data)

    def close(self) -> None:
        os.close(self._fd)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


@dataclass
class SideFile:
    lines: list[SideLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was dropped, for trial.log


def read_side_file(path: Path) -> SideFile:
    """Every valid line in order; an incomplete last line and lines that are not side-file
    records are dropped, each with a note. Raises OSError when the file cannot be read."""
    *complete, last = path.read_bytes().split(b"\n")
    side = SideFile()
    for number, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        try:
            side.lines.append(_LINE.validate_json(raw))
        except ValidationError as error:
            problem = error.errors(include_url=False)[0]
            where = ".".join(str(part) for part in problem["loc"]) or "line"
            side.notes.append(f"line {number} skipped: {where}: {problem['msg']}")
    if last.strip():
        side.notes.append(
            f"line {len(complete) + 1} dropped: incomplete ({len(last)} bytes, no newline; "
            "the agent stopped while writing it)"
        )
    return side
