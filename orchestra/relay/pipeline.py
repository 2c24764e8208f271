"""EVENT validation before the writer (protocol.md §4 steps 3-7 and the static parts of 9)."""

import orjson

from orchestra.nostr import tags
from orchestra.nostr.event import Event, EventError, check_id_and_signature, parse_event
from orchestra.nostr.hexutil import is_hex64
from orchestra.nostr.kinds import RELAY_ONLY_KINDS, UNSUPPORTED_CHANNEL_OPERATIONS, Kind
from orchestra.nostr.nip44 import is_v2_payload_shape
from orchestra.relay import channel_rules
from orchestra.relay.config import Limits
from orchestra.relay.outcome import Rejected


def validate_event(obj: object, author: str, limits: Limits, now: int) -> Event:
    """Return the verified event, or raise `Rejected` with the exact `OK false` message."""
    try:
        event = parse_event(obj, verify=False, max_event_bytes=limits.max_event_bytes)
    except EventError as error:
        raise Rejected(str(error)) from None
    if event.pubkey != author:
        raise Rejected("restricted: event pubkey does not match the authenticated pubkey")
    if event.kind == Kind.AUTH:
        raise Rejected("invalid: AUTH events must be sent with the AUTH message")
    if event.kind in RELAY_ONLY_KINDS:
        raise Rejected("restricted: relay-only kind")
    if event.created_at > now + limits.created_at_upper_limit:
        raise Rejected("invalid: created_at is too far in the future")
    if event.created_at < now - limits.created_at_lower_limit:
        raise Rejected("invalid: created_at is too old")
    try:
        check_id_and_signature(event)
    except EventError as error:
        raise Rejected(str(error)) from None
    check_kind_rules(event)
    return event


def check_kind_rules(event: Event) -> None:
    """Kind rules that need no stored state: channel tag shapes, memory (§11.1), profiles (§12)."""
    if channel_rules.is_channel_scoped(event) or event.kind in UNSUPPORTED_CHANNEL_OPERATIONS:
        channel_rules.check_static(event)
    if event.kind == Kind.MEMORY:
        d_tags = tags.named(event.tags, "d")
        if len(d_tags) != 1 or len(d_tags[0]) < 2 or not is_hex64(d_tags[0][1]):
            raise Rejected(
                "invalid: agent memory events need exactly one d tag of 64 lowercase hex"
            )
        if not is_v2_payload_shape(event.content):
            raise Rejected("invalid: agent memory content must be NIP-44 v2 ciphertext")
    elif event.kind == Kind.PROFILE:
        try:
            profile = orjson.loads(event.content)
        except orjson.JSONDecodeError:
            profile = None
        if not isinstance(profile, dict):
            raise Rejected("invalid: kind 0 content must be a JSON object")
