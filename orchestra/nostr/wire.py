"""Nostr wire messages (protocol.md §3, §14): frames built and parsed as pure functions.

Each frame is one JSON array. Builders return the frame text; parsers take the text and return a
typed message or raise `FrameError`, whose `str()` is the exact `invalid: …` reply the relay
sends and whose `event_id` / `subid` tell which frame answers it (`relay_refusal`).

Client messages are checked in two steps, so a relay can put its own checks (authentication)
in between without changing any reply: `parse_client_message` checks the frame and the parts
answered before authentication; `ClientReq.parse_filters` the filters, after it.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from orchestra.nostr.event import Event
from orchestra.nostr.filters import (
    DEFAULT_MAX_LIMIT,
    MAX_FILTER_VALUES,
    Filter,
    FilterError,
    parse_filter,
)

MAX_MESSAGE_BYTES = 262_144
MAX_SUBID_LENGTH = 64
MAX_FILTERS_PER_REQ = 20

NOT_JSON = "invalid: could not parse message as JSON"
NOT_AN_ARRAY = "invalid: message must be a JSON array starting with a string"
BINARY_FRAME = "invalid: binary frames are not supported"
EVENT_NEEDS_OBJECT = "invalid: EVENT needs exactly one event object"


class FrameError(ValueError):
    """A frame that breaks the wire format; `str()` is the exact reply text.

    `event_id` is set when the frame carries a readable event id (the relay answers `OK false`),
    `subid` when it names a subscription (`CLOSED`); with neither the answer is a `NOTICE`.
    """

    def __init__(self, message: str, *, event_id: str | None = None, subid: str | None = None):
        super().__init__(message)
        self.message = message
        self.event_id = event_id
        self.subid = subid

    def reply(self) -> str:
        """The relay's answer to this frame."""
        return relay_refusal(self.message, event_id=self.event_id, subid=self.subid)


# ---- JSON ------------------------------------------------------------------------------------


def dumps(value: Any) -> str:
    """Compact JSON text. Strings that hold lone surrogates (client-supplied ids echoed back),
    which orjson refuses, are `\\u`-escaped instead."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _decode(text: str) -> Any:
    """orjson first; the standard library only for what orjson refuses but JSON allows (lone
    surrogate escapes, integers beyond 64 bits), so those reach the precise `invalid:` replies
    of the event rules. `NaN` and `Infinity` are not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise FrameError(NOT_JSON) from None


def _decode_array(text: str) -> list[Any]:
    frame = _decode(text)
    if not isinstance(frame, list) or not frame or not isinstance(frame[0], str):
        raise FrameError(NOT_AN_ARRAY)
    return frame


def readable_id(obj: object) -> str | None:
    """The `id` of an event object when it is a string, however malformed the rest (§14)."""
    if isinstance(obj, dict):
        event_id = obj.get("id")
        if isinstance(event_id, str):
            return event_id
    return None


# ---- client → relay --------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientEvent:
    """`["EVENT", <event>]`: `event` is the undecoded object (`parse_event` validates it)."""

    event: dict[str, Any]

    @property
    def readable_id(self) -> str | None:
        return readable_id(self.event)


@dataclass(frozen=True)
class ClientReq:
    """`["REQ", <subid>, <filter>, …]` with the filters still undecoded."""

    subid: str
    filters: tuple[Any, ...]

    def parse_filters(
        self,
        *,
        max_filters: int = MAX_FILTERS_PER_REQ,
        max_values: int = MAX_FILTER_VALUES,
        max_limit: int = DEFAULT_MAX_LIMIT,
    ) -> list[Filter]:
        """The filters (protocol.md §5.1); a refusal names this subscription (`CLOSED`)."""
        if not self.filters:
            raise FrameError("invalid: REQ needs at least one filter", subid=self.subid)
        if len(self.filters) > max_filters:
            raise FrameError(f"invalid: too many filters (max {max_filters})", subid=self.subid)
        try:
            return [
                parse_filter(obj, max_values=max_values, max_limit=max_limit)
                for obj in self.filters
            ]
        except FilterError as error:
            raise FrameError(str(error), subid=self.subid) from None


@dataclass(frozen=True)
class ClientClose:
    """`["CLOSE", <subid>]`."""

    subid: str


@dataclass(frozen=True)
class ClientAuth:
    """`["AUTH", <event>]`: `event` is whatever the frame holds (`None` when absent); the NIP-42
    check (`nip42.check_auth_event`) judges it."""

    event: object

    @property
    def readable_id(self) -> str | None:
        return readable_id(self.event)


ClientMessage = ClientEvent | ClientReq | ClientClose | ClientAuth


def client_event(event: Event) -> str:
    """`["EVENT", <event>]`, embedding the event's canonical `raw` text."""
    return '["EVENT",' + event.raw + "]"


def client_auth(event: Event) -> str:
    """`["AUTH", <kind-22242 event>]`."""
    return '["AUTH",' + event.raw + "]"


def client_req(subid: str, filters: Sequence[Mapping[str, Any]]) -> str:
    return dumps(["REQ", subid, *filters])


def client_close(subid: str) -> str:
    return dumps(["CLOSE", subid])


def _check_size(frame: str, max_message_bytes: int) -> None:
    # UTF-8 needs at most 4 bytes per character: short frames skip the encode.
    if len(frame) * 4 > max_message_bytes:
        size = len(frame.encode("utf-8", "surrogatepass"))
        if size > max_message_bytes:
            raise FrameError(f"invalid: message too large ({size} bytes > {max_message_bytes})")


def parse_client_message(
    frame: str | bytes,
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_subid_length: int = MAX_SUBID_LENGTH,
) -> ClientMessage:
    """A client frame, in the order of protocol.md §3.3 and §14: binary and size, JSON, array
    shape, message type, then the message's own shape."""
    if isinstance(frame, bytes):
        raise FrameError(BINARY_FRAME)
    _check_size(frame, max_message_bytes)
    message = _decode_array(frame)
    kind, args = message[0], message[1:]
    if kind == "EVENT":
        obj = args[0] if args else None
        if len(args) != 1 or not isinstance(obj, dict):
            raise FrameError(EVENT_NEEDS_OBJECT, event_id=readable_id(obj))
        return ClientEvent(obj)
    if kind == "REQ":
        subid = args[0] if args else None
        if not isinstance(subid, str):
            raise FrameError("invalid: REQ needs a subscription id string")
        if not 1 <= len(subid) <= max_subid_length:
            raise FrameError(
                f"invalid: subscription id must be 1-{max_subid_length} characters", subid=subid
            )
        return ClientReq(subid, tuple(args[1:]))
    if kind == "CLOSE":
        if not args or not isinstance(args[0], str):
            raise FrameError("invalid: CLOSE needs a subscription id string")
        return ClientClose(args[0])
    if kind == "AUTH":
        return ClientAuth(args[0] if args else None)
    raise FrameError(f"invalid: unknown message type: {kind}")


# ---- relay → client --------------------------------------------------------------------------


@dataclass(frozen=True)
class RelayEvent:
    """`["EVENT", <subid>, <event>]`; `event` is the decoded object, unvalidated."""

    subid: str
    event: dict[str, Any]


@dataclass(frozen=True)
class RelayEose:
    subid: str


@dataclass(frozen=True)
class RelayOk:
    event_id: str
    accepted: bool
    message: str


@dataclass(frozen=True)
class RelayClosed:
    subid: str
    message: str


@dataclass(frozen=True)
class RelayNotice:
    message: str


@dataclass(frozen=True)
class RelayAuth:
    """The NIP-42 challenge."""

    challenge: str


RelayMessage = RelayEvent | RelayEose | RelayOk | RelayClosed | RelayNotice | RelayAuth


@dataclass(frozen=True)
class _Shape:
    build: Any  # the message class, called with the frame's arguments
    arguments: tuple[type, ...]
    description: str


_RELAY_SHAPES = {
    "EVENT": _Shape(RelayEvent, (str, dict), "a subscription id and an event object"),
    "EOSE": _Shape(RelayEose, (str,), "a subscription id"),
    "OK": _Shape(RelayOk, (str, bool, str), "an event id, true or false, and a message"),
    "CLOSED": _Shape(RelayClosed, (str, str), "a subscription id and a message"),
    "NOTICE": _Shape(RelayNotice, (str,), "a message"),
    "AUTH": _Shape(RelayAuth, (str,), "a challenge string"),
}


def relay_auth(challenge: str) -> str:
    return dumps(["AUTH", challenge])


def relay_event_prefix(subid: str) -> str:
    """`["EVENT",<subid>,`: a subscription's frames are this, the event's `raw`, then `]`."""
    return '["EVENT",' + dumps(subid) + ","


def relay_event(subid: str, raw: str) -> str:
    """`["EVENT", <subid>, <event>]`, embedding the stored canonical `raw` verbatim (§2.4)."""
    return relay_event_prefix(subid) + raw + "]"


def relay_eose(subid: str) -> str:
    return dumps(["EOSE", subid])


def relay_ok(event_id: str, accepted: bool, message: str) -> str:
    return dumps(["OK", event_id, accepted, message])


def relay_closed(subid: str, message: str) -> str:
    return dumps(["CLOSED", subid, message])


def relay_notice(message: str) -> str:
    return dumps(["NOTICE", message])


def relay_refusal(message: str, *, event_id: str | None = None, subid: str | None = None) -> str:
    """`OK false` when an event id is known, else `CLOSED` when a subscription is, else `NOTICE`."""
    if event_id is not None:
        return relay_ok(event_id, False, message)
    if subid is not None:
        return relay_closed(subid, message)
    return relay_notice(message)


def parse_relay_message(frame: str) -> RelayMessage:
    """A relay frame of exactly the NIP-01 shape (protocol.md §3.2)."""
    decoded = _decode_array(frame)
    kind, args = decoded[0], decoded[1:]
    shape = _RELAY_SHAPES.get(kind)
    if shape is None:
        raise FrameError(f"invalid: unknown message type: {kind}")
    if len(args) != len(shape.arguments) or not all(
        isinstance(arg, expected) for arg, expected in zip(args, shape.arguments, strict=True)
    ):
        raise FrameError(f"invalid: {kind} needs {shape.description}")
    message: RelayMessage = shape.build(*args)
    return message
