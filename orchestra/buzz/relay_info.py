"""The relay's NIP-11 page size (buzz-cli.md §5.2): one unauthenticated HTTP GET."""

import asyncio
import json

DEFAULT_MAX_LIMIT = 500


def _http_url(relay_url: str) -> str:
    if relay_url.startswith("wss://"):
        return "https://" + relay_url.removeprefix("wss://")
    return "http://" + relay_url.removeprefix("ws://")


def _read_max_limit(relay_url: str, wait_limit: float) -> int:
    import urllib.request  # only paged reads need HTTP; keep it off the start-up path

    request = urllib.request.Request(
        _http_url(relay_url), headers={"Accept": "application/nostr+json"}
    )
    # No proxies: the relay is addressed directly, as the WebSocket connection is.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=wait_limit) as response:
            document = json.loads(response.read())
        value = document["limitation"]["max_limit"]
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULT_MAX_LIMIT
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return DEFAULT_MAX_LIMIT


async def fetch_max_limit(relay_url: str, wait_limit: float) -> int:
    """`limitation.max_limit` of the NIP-11 document, or 500 when it cannot be read."""
    return await asyncio.to_thread(_read_max_limit, relay_url, wait_limit)
