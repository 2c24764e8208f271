"""Event kinds and their groups (protocol.md §1.4, §2.6; buzz-cli.md §5.2)."""

import json

import orjson

from orchestra.nostr.event import kind_class
from orchestra.nostr.kinds import (
    CHANNEL_KINDS,
    CHANNEL_MESSAGE_KINDS,
    CHANNEL_OPERATION_KINDS,
    CHANNEL_STATE_KINDS,
    RELAY_ONLY_KINDS,
    UNSUPPORTED_CHANNEL_OPERATIONS,
    Kind,
)


def test_groups_are_the_spec_lists_in_spec_order() -> None:
    assert CHANNEL_MESSAGE_KINDS == (9, 40002, 40008, 45001, 45003)
    assert CHANNEL_KINDS == (9, 9000, 9001, 9002, 9007, 9021, 9022)  # NIP-11 channel_kinds
    assert CHANNEL_STATE_KINDS == (39000, 39001, 39002)
    assert set(CHANNEL_OPERATION_KINDS).isdisjoint(UNSUPPORTED_CHANNEL_OPERATIONS)
    # Every NIP-29 management kind is either supported or refused as unsupported.
    assert set(range(9000, 9023)) == set(CHANNEL_OPERATION_KINDS) | UNSUPPORTED_CHANNEL_OPERATIONS
    assert all(kind in RELAY_ONLY_KINDS for kind in CHANNEL_STATE_KINDS)
    assert 39010 not in RELAY_ONLY_KINDS and Kind.MEMORY not in RELAY_ONLY_KINDS


def test_kinds_serialise_and_compare_as_plain_integers() -> None:
    frame = {"kinds": [Kind.MESSAGE, Kind.CHANNEL_MEMBERS]}
    assert orjson.dumps(frame) == b'{"kinds":[9,39002]}'
    assert json.dumps(frame, separators=(",", ":")) == '{"kinds":[9,39002]}'
    assert f"{Kind.AUTH}" == "22242" and Kind.PROFILE == 0


def test_kind_classes_of_the_named_kinds() -> None:
    assert kind_class(Kind.PROFILE) == kind_class(Kind.FOLLOW_LIST) == "replaceable"
    assert kind_class(Kind.AUTH) == "ephemeral"
    assert {kind_class(k) for k in (Kind.MEMORY, *CHANNEL_STATE_KINDS)} == {"addressable"}
    assert {kind_class(k) for k in (*CHANNEL_KINDS, *CHANNEL_MESSAGE_KINDS)} == {"regular"}
