"""Channel write rules (protocol.md §9.2-§9.8): decide whether an event is accepted and how
it changes the channel. Pure functions over the cache; the writer applies the result."""

import unicodedata
from dataclasses import dataclass, field

from orchestra.nostr import tags
from orchestra.nostr.event import Event
from orchestra.nostr.hexutil import is_hex64
from orchestra.nostr.kinds import (
    CHANNEL_OPERATION_KINDS,
    CHANNEL_STATE_KINDS,
    UNSUPPORTED_CHANNEL_OPERATIONS,
    Kind,
)
from orchestra.nostr.limits import CHANNEL_ABOUT_MAX_CHARS, CHANNEL_NAME_MAX_CHARS
from orchestra.relay.channels import UUID_RE, Channel, ChannelCache, ChannelChanges
from orchestra.relay.outcome import NOT_A_MEMBER, Rejected

STATE_CHANGING_KINDS = frozenset(CHANNEL_OPERATION_KINDS)
TTL_MIN, TTL_MAX = 60, 31_536_000
METADATA_FIELDS = ("name", "about", "visibility", "ttl", "archived")


@dataclass(frozen=True)
class ChannelPlan:
    """What an accepted channel-scoped event does. `new_channel` is None when state is unchanged."""

    channel_id: str
    new_channel: Channel | None = None
    state_kinds: tuple[Kind, ...] = ()
    thread_refs: tuple[tuple[str, str], ...] = field(default=())  # (marker, event id)


def is_channel_scoped(event: Event) -> bool:
    return (
        event.kind == Kind.MESSAGE
        or event.kind in STATE_CHANGING_KINDS
        or tags.has(event.tags, "h")
    )


def check_static(event: Event) -> None:
    """Rules that need no channel state (run before the event is queued)."""
    if event.kind in UNSUPPORTED_CHANNEL_OPERATIONS:
        raise Rejected(f"invalid: unsupported channel operation (kind {event.kind})")
    h_tags = tags.named(event.tags, "h")
    if (event.kind == Kind.MESSAGE or event.kind in STATE_CHANGING_KINDS) and not h_tags:
        raise Rejected("invalid: channel-scoped events must include an h tag")
    if not h_tags:
        return
    if len(h_tags) > 1:
        raise Rejected("invalid: only one h tag is allowed")
    if len(h_tags[0]) < 2 or not UUID_RE.match(h_tags[0][1]):
        raise Rejected("invalid: h tag must be a lowercase UUID")
    if event.kind == Kind.MESSAGE:
        _check_message_tags(event)


def _check_message_tags(event: Event) -> None:
    for tag in event.tags:
        if tag[0] == "e" and (len(tag) < 2 or not is_hex64(tag[1])):
            raise Rejected("invalid: e tag value must be 64-character lowercase hex")
        if tag[0] == "p" and (len(tag) < 2 or not is_hex64(tag[1])):
            raise Rejected("invalid: p tag value must be 64-character lowercase hex")
    markers = [marker for marker, _ in tags.thread_references(event.tags)]
    if markers.count(tags.ROOT) > 1 or markers.count(tags.REPLY) > 1:
        raise Rejected("invalid: at most one root and one reply e tag are allowed")


def thread_refs(event: Event) -> tuple[tuple[str, str], ...]:
    """The references a message's channel must hold (§9.6); none for other kinds."""
    return tags.thread_references(event.tags) if event.kind == Kind.MESSAGE else ()


def plan(event: Event, cache: ChannelCache, now: int) -> ChannelPlan:
    """Check a channel-scoped event (after `check_static`) against current state."""
    channel_id = tags.channel_id(event.tags)
    assert channel_id is not None  # check_static required exactly one h tag with a UUID
    if event.kind == Kind.CREATE_CHANNEL:
        return _plan_create(event, channel_id, cache, now)
    channel = cache.get(channel_id)
    if channel is None:
        raise Rejected("invalid: unknown channel")
    if channel.archived and not (
        event.kind == Kind.EDIT_METADATA and _tag(event, "archived") is not None
    ):
        raise Rejected("invalid: channel is archived")
    role = channel.role_of(event.pubkey)
    if event.kind == Kind.JOIN_REQUEST:
        if role is not None:
            raise Rejected("duplicate: already a member")
        if channel.is_private:
            raise Rejected("restricted: channel is private; ask an admin to add you")
        members = {**channel.members, event.pubkey: "member"}
        return ChannelPlan(channel_id, channel.replace(members=members), (Kind.CHANNEL_MEMBERS,))
    if role is None:
        raise Rejected(NOT_A_MEMBER)
    if event.kind == Kind.PUT_USER:
        return _plan_put_user(event, channel, role)
    if event.kind == Kind.REMOVE_USER:
        return _plan_remove(event, channel, role, _single_p(event))
    if event.kind == Kind.LEAVE_REQUEST:
        if role == "owner":
            raise Rejected("restricted: the owner cannot leave the channel")
        return _plan_remove(event, channel, role, event.pubkey)
    if event.kind == Kind.EDIT_METADATA:
        return _plan_edit(event, channel, role, now)
    return ChannelPlan(channel_id, thread_refs=thread_refs(event))


def _tag(event: Event, name: str) -> str | None:
    """The first `name` tag's value, `""` when that tag has none, None without such a tag (a
    present but empty field still counts, e.g. `["about"]` clears the about text)."""
    found = tags.named(event.tags, name)
    if not found:
        return None
    return found[0][1] if len(found[0]) >= 2 else ""


def _valid_name(value: str) -> str:
    name = value.strip()
    if not 1 <= len(name) <= CHANNEL_NAME_MAX_CHARS or any(
        unicodedata.category(ch) == "Cc" for ch in name
    ):
        raise Rejected(
            f"invalid: name must be 1-{CHANNEL_NAME_MAX_CHARS} characters without control "
            "characters"
        )
    return name


def _valid_about(value: str) -> str:
    if len(value) > CHANNEL_ABOUT_MAX_CHARS:
        raise Rejected(f"invalid: about must be at most {CHANNEL_ABOUT_MAX_CHARS} characters")
    return value


def _valid_visibility(value: str) -> str:
    if value not in ("open", "private"):
        raise Rejected("invalid: visibility must be open or private")
    return value


def _valid_ttl(value: str, *, allow_zero: bool) -> int | None:
    if value.isascii() and value.isdigit():
        seconds = int(value)
        if allow_zero and seconds == 0:
            return None
        if TTL_MIN <= seconds <= TTL_MAX:
            return seconds
    raise Rejected(f"invalid: ttl must be an integer between {TTL_MIN} and {TTL_MAX}")


def _plan_create(event: Event, channel_id: str, cache: ChannelCache, now: int) -> ChannelPlan:
    if cache.get(channel_id) is not None:
        raise Rejected("invalid: channel already exists")
    name = _tag(event, "name")
    if name is None:
        raise Rejected("invalid: name is required")
    channel_type = _tag(event, "channel_type") or "stream"
    if channel_type not in ("stream", "forum"):
        raise Rejected("invalid: channel_type must be stream or forum")
    ttl = _tag(event, "ttl")
    channel = Channel(
        channel_id=channel_id,
        name=_valid_name(name),
        about=_valid_about(_tag(event, "about") or ""),
        visibility=_valid_visibility(_tag(event, "visibility") or "open"),
        channel_type=channel_type,
        ttl_seconds=None if ttl is None else _valid_ttl(ttl, allow_zero=False),
        creator=event.pubkey,
        created_at=event.created_at,
        archived=False,
        archived_at=None,
        last_activity_at=now,
        create_event_id=event.id,
        members={event.pubkey: "owner"},
    )
    return ChannelPlan(channel_id, channel, CHANNEL_STATE_KINDS)


def _single_p(event: Event) -> str:
    p_tags = tags.named(event.tags, "p")
    if len(p_tags) != 1:
        raise Rejected("invalid: exactly one p tag is required")
    if len(p_tags[0]) < 2 or not is_hex64(p_tags[0][1]):
        raise Rejected("invalid: p tag value must be 64-character lowercase hex")
    return p_tags[0][1]


def _plan_put_user(event: Event, channel: Channel, role: str) -> ChannelPlan:
    target = _single_p(event)
    p_tag = tags.named(event.tags, "p")[0]
    new_role = (p_tag[2] if len(p_tag) > 2 else "") or "member"
    if new_role not in ("member", "bot", "admin"):
        raise Rejected("invalid: role must be member, bot or admin")
    if role not in ("owner", "admin"):
        raise Rejected("restricted: only the owner or an admin can add members")
    current = channel.role_of(target)
    if current == "owner":
        raise Rejected("restricted: the owner's role cannot be changed")
    if (new_role == "admin" or current == "admin") and role != "owner":
        raise Rejected("restricted: only the owner can grant or revoke admin")
    if current == new_role:
        return ChannelPlan(channel.channel_id)
    members = {**channel.members, target: new_role}
    admins_changed = "admin" in (current, new_role)
    kinds = (
        (Kind.CHANNEL_ADMINS, Kind.CHANNEL_MEMBERS) if admins_changed else (Kind.CHANNEL_MEMBERS,)
    )
    return ChannelPlan(channel.channel_id, channel.replace(members=members), kinds)


def _plan_remove(event: Event, channel: Channel, role: str, target: str) -> ChannelPlan:
    current = channel.role_of(target)
    if target != event.pubkey:
        if role not in ("owner", "admin"):
            raise Rejected("restricted: only the owner or an admin can remove members")
        if current == "admin" and role != "owner":
            raise Rejected("restricted: only the owner can remove an admin")
    if current == "owner":
        raise Rejected("restricted: the owner cannot be removed")
    if current is None:
        return ChannelPlan(channel.channel_id)
    members = {pk: r for pk, r in channel.members.items() if pk != target}
    kinds = (
        (Kind.CHANNEL_ADMINS, Kind.CHANNEL_MEMBERS)
        if current == "admin"
        else (Kind.CHANNEL_MEMBERS,)
    )
    return ChannelPlan(channel.channel_id, channel.replace(members=members), kinds)


def _plan_edit(event: Event, channel: Channel, role: str, now: int) -> ChannelPlan:
    present = {name: value for name in METADATA_FIELDS if (value := _tag(event, name)) is not None}
    if not present:
        raise Rejected("invalid: no metadata fields to change")
    if role not in ("owner", "admin"):
        raise Rejected("restricted: only the owner or an admin can edit channel metadata")
    changes: ChannelChanges = {}
    if "name" in present:
        changes["name"] = _valid_name(present["name"])
    if "about" in present:
        changes["about"] = _valid_about(present["about"])
    if "visibility" in present:
        changes["visibility"] = _valid_visibility(present["visibility"])
    if "ttl" in present:
        changes["ttl_seconds"] = _valid_ttl(present["ttl"], allow_zero=True)
    if "archived" in present:
        if present["archived"] not in ("true", "false"):
            raise Rejected("invalid: archived must be true or false")
        archive = present["archived"] == "true"
        if channel.archived and archive:
            return ChannelPlan(channel.channel_id)  # archiving an archived channel: no-op
        if archive != channel.archived:
            changes["archived"] = archive
            changes["archived_at"] = now if archive else None
            if not archive:
                changes["last_activity_at"] = now
    edited = channel.replace(**changes)
    if edited == channel:
        return ChannelPlan(channel.channel_id)
    return ChannelPlan(channel.channel_id, edited, (Kind.CHANNEL_METADATA,))


def archive_for_ttl(channel: Channel, now: int) -> Channel | None:
    """The archived version of an idle TTL channel (§9.10), or None when it stays active."""
    if channel.archived or channel.ttl_seconds is None:
        return None
    if now < channel.last_activity_at + channel.ttl_seconds:
        return None
    return channel.replace(archived=True, archived_at=now)
