"""The providers' official SDKs as the reference for the wire (dev-only dependencies).

Requests. The SDKs type request bodies as `TypedDict`s (`openai.types.chat.completion_create_
params.CompletionCreateParamsNonStreaming`, `openai.types.responses.response_create_params.
ResponseCreateParamsNonStreaming`, `anthropic.types.message_create_params.
MessageCreateParamsNonStreaming`). Pydantic validates a TypedDict through `TypeAdapter`, but
two things have to be arranged for that to be a real check:

* Unknown keys. `TypeAdapter(..., config=...)` is refused for a TypedDict, and the config of
  the outer TypedDict does not reach the nested ones (each message, content part, tool is its
  own TypedDict). Pydantic reads a TypedDict's own `__pydantic_config__`, so `forbid_unknown_keys`
  sets `extra="forbid", strict=True` on every TypedDict the two SDKs define (once, before the
  first adapter is built). `arbitrary_types_allowed` is needed only because a few Anthropic
  file-upload types mention `IO[bytes]`. The SDKs use these classes as type hints only, so the
  attribute changes nothing else in the test process.
* Lazy iterables. The SDKs type lists as `Iterable[...]`, which pydantic validates lazily: the
  result holds a `ValidatorIterator` whose items are checked only when iterated. `validate_
  request` walks the whole result and drains every iterator, so a bad message deep in the
  history fails the check.

Responses. Replies are built with the SDKs' response models (`openai.types.chat.
ChatCompletion`, `openai.types.responses.Response`, `anthropic.types.Message`) — pydantic
models that validate their input — and sent as their JSON dump, so a reply the fake serves is
one the real API could send.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from functools import cache
from types import ModuleType
from typing import Any

import anthropic.types
import openai.types
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from fake_llm import Reply
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import BaseModel, ConfigDict, TypeAdapter
from typing_extensions import is_typeddict

_STRICT = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
_REQUEST_TYPES: dict[str, Any] = {
    "chat": CompletionCreateParamsNonStreaming,
    "responses": ResponseCreateParamsNonStreaming,
    "anthropic": MessageCreateParamsNonStreaming,
}


def _typeddicts(package: ModuleType) -> list[type]:
    found: list[type] = []
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        found.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and is_typeddict(value)
            and value.__module__ == module.__name__
        )
    return found


@cache
def forbid_unknown_keys() -> int:
    """Mark every SDK TypedDict strict with unknown keys forbidden; returns how many."""
    classes = _typeddicts(openai.types) + _typeddicts(anthropic.types)
    for cls in classes:
        cls.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]
    return len(classes)


@cache
def _adapter(route: str) -> TypeAdapter[Any]:
    forbid_unknown_keys()
    return TypeAdapter(_REQUEST_TYPES[route])


def _drain(value: Any) -> Any:
    if isinstance(value, Iterator):  # pydantic's ValidatorIterator
        return [_drain(item) for item in value]
    if isinstance(value, dict):
        return {key: _drain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_drain(item) for item in value]
    return value


def validate_request(route: str, body: dict[str, Any]) -> None:
    """Raises pydantic.ValidationError when `body` is not a valid request of the route's SDK
    type (unknown keys, missing required keys, wrong types, anywhere in the body)."""
    _drain(_adapter(route).validate_python(body))


def sdk_reply(model: BaseModel) -> Reply:
    """A 200 reply whose body is the SDK model's JSON, as the API would send it."""
    return Reply(body=model.model_dump(mode="json", exclude_unset=True))
