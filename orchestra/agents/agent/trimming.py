"""Context size estimate and history trimming (agent-harness.md §2.9)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from orchestra.agents.agent.tools import elide_middle
from orchestra.agents.llm.types import (
    AssistantMessage,
    HistoryItem,
    ToolResult,
    ToolSpec,
    UserMessage,
)

log = logging.getLogger("buzz_agent")

CHARS_PER_TOKEN = 4
EARLIER_RESULT_KEEP_BYTES = 2048  # first and last 1 KiB
CURRENT_RESULT_KEEP_BYTES = 1024
CURRENT_RESULTS_KEPT_WHOLE = 2


def item_chars(item: HistoryItem) -> int:
    if isinstance(item, AssistantMessage):
        return (
            len(item.text)
            + sum(len(c.arguments) + len(c.name) for c in item.tool_calls)
            + sum(len(json.dumps(block)) for block in item.replay)
        )
    return len(item.text)


@dataclass
class ContextMeter:
    """Estimated prompt tokens = last reported input tokens + characters added since / 4."""

    fixed_chars: int = 0  # system prompt and tool definitions, counted until a call reports usage
    reported_tokens: int = 0
    chars_at_report: int = 0
    has_report: bool = False

    @classmethod
    def for_session(cls, system: str, tools: list[ToolSpec]) -> ContextMeter:
        tool_chars = sum(
            len(t.name) + len(t.description) + len(json.dumps(t.input_schema)) for t in tools
        )
        return cls(fixed_chars=len(system) + tool_chars)

    def estimate(self, history: list[HistoryItem]) -> int:
        chars = sum(item_chars(item) for item in history)
        if not self.has_report:
            return (self.fixed_chars + chars) // CHARS_PER_TOKEN
        return max(0, self.reported_tokens + (chars - self.chars_at_report) // CHARS_PER_TOKEN)

    def record(self, input_tokens: int, history_sent: list[HistoryItem]) -> None:
        self.reported_tokens = input_tokens
        self.chars_at_report = sum(item_chars(item) for item in history_sent)
        self.has_report = input_tokens > 0


def _turn_starts(history: list[HistoryItem]) -> list[int]:
    return [
        i for i, item in enumerate(history) if isinstance(item, UserMessage) and item.starts_turn
    ]


def trim_history(history: list[HistoryItem], meter: ContextMeter, threshold: int) -> None:
    """Shrink `history` in place until the estimate is at or below `threshold`, in the order
    of §2.9. Never removes the current prompt and never separates a tool call from its result."""
    before = meter.estimate(history)
    if before <= threshold:
        return

    def above() -> bool:
        return meter.estimate(history) > threshold

    current = _turn_starts(history)[-1] if _turn_starts(history) else 0
    # (1) Earlier turns' tool results: keep first and last 1 KiB.
    for item in history[:current]:
        if not above():
            break
        if isinstance(item, ToolResult):
            item.text = elide_middle(item.text, EARLIER_RESULT_KEEP_BYTES)
    # (2) Drop whole earlier turns, oldest first.
    while above():
        starts = _turn_starts(history)
        if len(starts) < 2:
            break
        del history[starts[0] : starts[1]]
    # (3) Current turn: all tool results but the last two shrink to 1 KiB.
    current = _turn_starts(history)[-1] if _turn_starts(history) else 0
    results = [item for item in history[current:] if isinstance(item, ToolResult)]
    for item in results[:-CURRENT_RESULTS_KEPT_WHOLE]:
        if not above():
            break
        item.text = elide_middle(item.text, CURRENT_RESULT_KEEP_BYTES)
    log.info("context trimmed: %d -> %d estimated tokens", before, meter.estimate(history))
