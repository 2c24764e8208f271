"""Every event kind the project knows (protocol.md §2.5-§2.6), and the groups several readers share.

`Kind` is an `IntEnum`, so members compare equal to the integers of decoded JSON and serialise as
plain integers (`orjson`, `json`).
"""

from enum import IntEnum


class Kind(IntEnum):
    PROFILE = 0
    FOLLOW_LIST = 3  # NIP-02; only its replaceable class (protocol.md §2.5) matters here
    MESSAGE = 9
    PUT_USER = 9000
    REMOVE_USER = 9001
    EDIT_METADATA = 9002
    CREATE_CHANNEL = 9007
    JOIN_REQUEST = 9021
    LEAVE_REQUEST = 9022
    AUTH = 22242
    MEMORY = 30174
    CHANNEL_METADATA = 39000
    CHANNEL_ADMINS = 39001
    CHANNEL_MEMBERS = 39002
    # Upstream Buzz message kinds, read for compatibility (buzz-cli.md §5.2 `--kinds`) but never
    # produced by this project's tools; the spec gives them no names.
    UPSTREAM_MESSAGE_40002 = 40002
    UPSTREAM_MESSAGE_40008 = 40008
    UPSTREAM_MESSAGE_45001 = 45001
    UPSTREAM_MESSAGE_45003 = 45003


CHANNEL_MESSAGE_KINDS: tuple[Kind, ...] = (
    Kind.MESSAGE,
    Kind.UPSTREAM_MESSAGE_40002,
    Kind.UPSTREAM_MESSAGE_40008,
    Kind.UPSTREAM_MESSAGE_45001,
    Kind.UPSTREAM_MESSAGE_45003,
)
"""What `buzz messages get` reads by default, the evidence keeps and the trial observes
(buzz-cli.md §5.2, orchestrator.md §8.2), in that order."""

CHANNEL_OPERATION_KINDS: tuple[Kind, ...] = (
    Kind.PUT_USER,
    Kind.REMOVE_USER,
    Kind.EDIT_METADATA,
    Kind.CREATE_CHANNEL,
    Kind.JOIN_REQUEST,
    Kind.LEAVE_REQUEST,
)
"""Channel-scoped kinds that change channel state (protocol.md §9.3-§9.8)."""

CHANNEL_KINDS: tuple[Kind, ...] = (Kind.MESSAGE, *CHANNEL_OPERATION_KINDS)
"""NIP-11 `buzz.channel_kinds` (protocol.md §1.4)."""

CHANNEL_STATE_KINDS: tuple[Kind, ...] = (
    Kind.CHANNEL_METADATA,
    Kind.CHANNEL_ADMINS,
    Kind.CHANNEL_MEMBERS,
)
"""Relay-signed channel state, addressable with `d` = the channel id (protocol.md §9.9)."""

RELAY_ONLY_KINDS = range(39000, 39010)
"""Kinds clients may not publish (`restricted: relay-only kind`, protocol.md §4 step 5)."""

UNSUPPORTED_CHANNEL_OPERATIONS = frozenset(range(9003, 9007)) | frozenset(range(9008, 9021))
"""Other NIP-29 management kinds, refused as unsupported (protocol.md §2.6)."""
