"""What a failed LLM call means, from the HTTP status and the provider's error body.

The classes follow the providers' own error types, so that only what the model did is scored:

* Anthropic: `{"type": "error", "error": {"type": "invalid_request_error" |
  "authentication_error" | "permission_error" | "billing_error" | "not_found_error" |
  "request_too_large" | "rate_limit_error" | "api_error" | "overloaded_error" |
  "timeout_error", "message": …}}`; an empty balance is a 400 `invalid_request_error` whose
  message says "credit balance is too low"; a prompt over the window is a 400 "prompt is too
  long".
* OpenAI (and compatible servers): `{"error": {"message", "type", "param", "code"}}`; an empty
  balance is a 429 with type/code `insufficient_quota`; a prompt over the window a 400 with code
  `context_length_exceeded` (vLLM and llama.cpp say "maximum context length" in the message);
  a flagged prompt a 400 with code `content_policy_violation`, `content_filter` (Azure) or
  `invalid_prompt` (Responses). OpenRouter answers 402 for missing credits.

Each class has one policy (`POLICIES`): whether the outcome is the model's to be scored, whether
a retry can help, and whether the run must stop at once (no trial can succeed).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FailureClass(StrEnum):
    AUTH = "auth"  # the key is refused or lacks permission
    BILLING = "billing"  # no credit, quota or spend limit left
    RATE_LIMIT = "rate_limit"
    OVERLOAD = "overload"  # the provider is overloaded (Anthropic 529)
    SERVER_ERROR = "server_error"  # a 5xx, a timeout or a dropped connection
    BAD_RESPONSE = "bad_response"  # a 2xx that is not a usable answer
    BAD_REQUEST = "bad_request"  # the harness built a request the provider rejects
    CONTEXT_OVERFLOW = "context_overflow"  # the conversation the model built is too long
    CONTENT_REFUSAL = "content_refusal"  # the provider refused the content (policy filter)
    INVALID_OUTPUT = "invalid_output"  # the server could not parse the model's own output


@dataclass(frozen=True)
class FailurePolicy:
    scored: bool  # the model's doing: the trial is scored, not an error
    retryable: bool  # the same request again may succeed
    stops_run: bool  # no trial of the run can succeed: stop starting trials at once


POLICIES: dict[FailureClass, FailurePolicy] = {
    FailureClass.AUTH: FailurePolicy(scored=False, retryable=False, stops_run=True),
    FailureClass.BILLING: FailurePolicy(scored=False, retryable=False, stops_run=True),
    FailureClass.RATE_LIMIT: FailurePolicy(scored=False, retryable=True, stops_run=False),
    FailureClass.OVERLOAD: FailurePolicy(scored=False, retryable=True, stops_run=False),
    FailureClass.SERVER_ERROR: FailurePolicy(scored=False, retryable=True, stops_run=False),
    FailureClass.BAD_RESPONSE: FailurePolicy(scored=False, retryable=True, stops_run=False),
    FailureClass.BAD_REQUEST: FailurePolicy(scored=False, retryable=False, stops_run=False),
    FailureClass.CONTEXT_OVERFLOW: FailurePolicy(scored=True, retryable=False, stops_run=False),
    FailureClass.CONTENT_REFUSAL: FailurePolicy(scored=True, retryable=False, stops_run=False),
    # Not the provider's retry: buzz-agent asks the model again with a corrective note
    # (agent-harness.md §2.4), outside the retry budget.
    FailureClass.INVALID_OUTPUT: FailurePolicy(scored=True, retryable=False, stops_run=False),
}

_BILLING_WORDS = (
    "credit balance",
    "insufficient_quota",
    "exceeded your current quota",
    "insufficient credits",
    "billing",
    "spend limit",
)
_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_CONTEXT_WORDS = (
    "context window",
    "context_length",
    "context length",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "input is too long",
)
#: How llama.cpp, Ollama and vLLM say that the model's own output could not be parsed.
INVALID_OUTPUT_WORDS = (
    "the model produced output that does not match the expected",  # llama.cpp
    "error parsing tool call",  # Ollama
    "malformedtoolcallerror",  # vLLM
    "malformed tool call",  # vLLM
)
_REFUSAL_CODES = frozenset({"content_policy_violation", "content_filter", "invalid_prompt"})
_ANTHROPIC_TYPES = {
    "authentication_error": FailureClass.AUTH,
    "permission_error": FailureClass.AUTH,
    "billing_error": FailureClass.BILLING,
    "rate_limit_error": FailureClass.RATE_LIMIT,
    "overloaded_error": FailureClass.OVERLOAD,
    "api_error": FailureClass.SERVER_ERROR,
    "timeout_error": FailureClass.SERVER_ERROR,
}
#: Statuses that are the provider's, whatever the body says.
_STATUS_CLASSES = {
    401: FailureClass.AUTH,
    402: FailureClass.BILLING,
    403: FailureClass.AUTH,
    408: FailureClass.SERVER_ERROR,
    409: FailureClass.SERVER_ERROR,
    425: FailureClass.SERVER_ERROR,
    429: FailureClass.RATE_LIMIT,
    529: FailureClass.OVERLOAD,
}


def classify(
    status: int, error_type: str | None, error_code: str | None, message: str
) -> FailureClass:
    """The class of an HTTP error answer (`error_type`/`error_code`: the body's `error.type`
    and `error.code`, when it had them)."""
    text = message.lower()
    labels = {label.lower() for label in (error_type, error_code) if label}
    if labels & {"insufficient_quota", "billing_error"} or any(w in text for w in _BILLING_WORDS):
        return FailureClass.BILLING
    if labels & _CONTEXT_CODES or (
        status in (400, 413) and any(word in text for word in _CONTEXT_WORDS)
    ):
        return FailureClass.CONTEXT_OVERFLOW
    if status >= 500 and any(word in text for word in INVALID_OUTPUT_WORDS):
        return FailureClass.INVALID_OUTPUT
    if labels & _REFUSAL_CODES:
        return FailureClass.CONTENT_REFUSAL
    for label in labels:
        if label in _ANTHROPIC_TYPES:
            return _ANTHROPIC_TYPES[label]
    if status in _STATUS_CLASSES:
        return _STATUS_CLASSES[status]
    if status >= 500:
        return FailureClass.SERVER_ERROR
    return FailureClass.BAD_REQUEST
