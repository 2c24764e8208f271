"""The read rule `can_read` (protocol.md §10), applied at every live delivery.

Stored-result queries apply the same rule in SQL (storage/queries.py)."""

from orchestra.nostr import tags
from orchestra.nostr.event import Event
from orchestra.nostr.kinds import Kind
from orchestra.relay.channels import ChannelCache


def event_channel_id(event: Event) -> str | None:
    """The channel an event belongs to for access control: its `h`, or `d` for state kinds."""
    return tags.access_channel(event.kind, event.tags)


def can_read(reader: str | None, event: Event, channel_id: str | None, cache: ChannelCache) -> bool:
    # Both rules apply (as in the SQL of §15.3): an h-tagged memory event stays author-only
    # and channel-restricted.
    if event.kind == Kind.MEMORY and event.pubkey != reader:
        return False
    return channel_id is None or cache.can_read(channel_id, reader)
