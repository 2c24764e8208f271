"""NIP-42 authentication events and the relay-URL check (protocol.md §7)."""

from urllib.parse import urlsplit

from orchestra.nostr import tags
from orchestra.nostr.event import Event, EventError, parse_event, sign_event
from orchestra.nostr.keys import Keys
from orchestra.nostr.kinds import Kind

AUTH_WINDOW_SECONDS = 600
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_DEFAULT_PORTS = {"ws": 80, "wss": 443}


class AuthError(ValueError):
    """A refused AUTH event; `str()` is the reason (the relay adds its prefix)."""


def make_auth_event(
    keys: Keys, relay_url: str, challenge: str, created_at: int | None = None
) -> Event:
    return sign_event(
        keys, Kind.AUTH, "", [["relay", relay_url], ["challenge", challenge]], created_at=created_at
    )


def normalize_relay_url(url: str) -> str:
    """Canonical form for comparing relay URLs; raises ValueError for non-ws(s) URLs."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid relay URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"invalid relay URL {url!r}: expected ws:// or wss://")
    host = parts.hostname.lower()
    if host in _LOOPBACK_HOSTS:
        host = "localhost"
    elif ":" in host:
        host = f"[{host}]"
    path = parts.path or "/"
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    return f"{scheme}://{host}:{port or _DEFAULT_PORTS[scheme]}{path}"


def check_auth_event(
    obj: object, *, challenge: str, accepted_urls: list[str] | None, now: int
) -> Event:
    """Validate an AUTH event. `accepted_urls=None` accepts any well-formed ws(s) URL."""
    try:
        event = parse_event(obj, verify=False)
    except EventError as exc:
        raise AuthError(str(exc).removeprefix("invalid: ")) from None
    if event.kind != Kind.AUTH:
        raise AuthError(f"kind must be {Kind.AUTH:d}")
    if not event.has_valid_id():
        raise AuthError("bad event id")
    if not event.has_valid_signature():
        raise AuthError("bad signature")
    tag_challenge = tags.sole_value(event.tags, "challenge")
    if tag_challenge is None:
        raise AuthError("missing or duplicate challenge tag")
    if tag_challenge != challenge:
        raise AuthError("challenge mismatch")
    relay = tags.sole_value(event.tags, "relay")
    if relay is None:
        raise AuthError("missing or duplicate relay tag")
    try:
        normalized = normalize_relay_url(relay)
    except ValueError:
        raise AuthError("relay url mismatch") from None
    if accepted_urls is not None and normalized not in {
        normalize_relay_url(u) for u in accepted_urls
    }:
        raise AuthError("relay url mismatch")
    if abs(now - event.created_at) > AUTH_WINDOW_SECONDS:
        raise AuthError("created_at outside the allowed window")
    return event
