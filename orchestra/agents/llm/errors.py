"""Classified LLM call failures (agent-harness.md §2.2, §2.8)."""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal["llm_http_error", "llm_network_error", "llm_bad_response"]

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_CONTEXT_MARKERS = (
    "context window",
    "context_length",
    "context length",
    "maximum context",
    "too long",
    "too many tokens",
    "prompt is too long",
)


class LLMError(Exception):
    """One failed attempt. `retry_after` is the server's requested wait in seconds, if any."""

    def __init__(
        self,
        kind: ErrorKind,
        detail: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        if self.kind == "llm_http_error":
            return self.status in RETRYABLE_STATUSES
        return True

    @property
    def is_context_overflow(self) -> bool:
        if self.status != 400:
            return False
        lowered = self.detail.lower()
        return any(marker in lowered for marker in _CONTEXT_MARKERS)

    def mentions(self, *needles: str) -> bool:
        lowered = self.detail.lower()
        return any(needle in lowered for needle in needles)

    def describe(self) -> str:
        return f"HTTP {self.status}" if self.status is not None else self.kind
