"""Classified LLM call failures (agent-harness.md §2.2, §2.8)."""

from __future__ import annotations

from typing import Literal

from orchestra.agents.llm.budget import used_up_note
from orchestra.agents.llm.failures import POLICIES, FailureClass, classify

ErrorKind = Literal["llm_http_error", "llm_network_error", "llm_bad_response"]

_KIND_CLASSES = {
    "llm_network_error": FailureClass.SERVER_ERROR,
    "llm_bad_response": FailureClass.BAD_RESPONSE,
}


class LLMError(Exception):
    """One failed attempt. `retry_after` is the server's requested wait in seconds, if any;
    `error_type`/`error_code` are the error body's `error.type` and `error.code`."""

    def __init__(
        self,
        kind: ErrorKind,
        detail: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        error_type: str | None = None,
        error_code: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status
        self.retry_after = retry_after
        self.budget_exhausted = False
        self.failure_class = (
            classify(status, error_type, error_code, detail)
            if kind == "llm_http_error" and status is not None
            else _KIND_CLASSES.get(kind, FailureClass.SERVER_ERROR)
        )

    @property
    def retryable(self) -> bool:
        return POLICIES[self.failure_class].retryable and not self.budget_exhausted

    def exhaust_budget(self, spent: str) -> None:
        """The process's retry budget (budget.py) is used up: no one retries this failure."""
        self.budget_exhausted = True
        self.detail = f"{self.detail} {used_up_note(spent)}"

    @property
    def is_context_overflow(self) -> bool:
        return self.failure_class is FailureClass.CONTEXT_OVERFLOW

    @property
    def is_invalid_output(self) -> bool:
        return self.failure_class is FailureClass.INVALID_OUTPUT

    def mentions(self, *needles: str) -> bool:
        lowered = self.detail.lower()
        return any(needle in lowered for needle in needles)

    def describe(self) -> str:
        return f"HTTP {self.status}" if self.status is not None else self.kind
