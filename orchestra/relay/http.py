"""Plain HTTP on the relay port (protocol.md §1.3-§1.4): NIP-11, health checks, 404."""

import asyncio
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import orjson
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from orchestra.nostr.kinds import CHANNEL_KINDS, CHANNEL_STATE_KINDS, Kind

if TYPE_CHECKING:
    from orchestra.relay.server import Relay

READINESS_TIMEOUT_SECONDS = 2.0
BANNER = "Buzz relay. Connect with a Nostr client over WebSocket.\n"


def package_version() -> str:
    try:
        return version("buzz-orchestra")
    except PackageNotFoundError:
        return "0.0.0"


def relay_information(relay: "Relay") -> dict[str, Any]:
    limits = relay.config.limits
    pubkey = relay.relay_keys.pubkey
    return {
        "name": relay.config.name,
        "description": relay.config.description,
        "pubkey": pubkey,
        "self": pubkey,
        "supported_nips": [1, 10, 11, 29, 42, 70],
        "software": "buzz-testbed-relay",
        "version": package_version(),
        "limitation": {
            "max_message_length": limits.max_message_bytes,
            "max_subscriptions": limits.max_subscriptions,
            "max_limit": limits.max_limit,
            "default_limit": limits.max_limit,
            "max_subid_length": limits.max_subid_length,
            "max_event_tags": 2000,
            "max_content_length": 100_000,
            "auth_required": True,
            "restricted_writes": True,
            "payment_required": False,
            "created_at_lower_limit": limits.created_at_lower_limit,
            "created_at_upper_limit": limits.created_at_upper_limit,
        },
        "buzz": {
            "max_event_bytes": limits.max_event_bytes,
            "max_filters_per_req": limits.max_filters_per_req,
            "max_filter_values": limits.max_filter_values,
            "auth_window_seconds": limits.auth_window_seconds,
            "auth_timeout_seconds": limits.auth_timeout_seconds,
            "max_connections": relay.admission.max_total,
            "max_connections_per_ip": limits.max_connections_per_ip,
            "max_events_per_second": limits.max_events_per_second,
            "max_event_bytes_per_second": limits.max_event_bytes_per_second,
            "max_pending_send_bytes": limits.max_pending_send_bytes,
            "max_pending_send_bytes_total": limits.max_pending_send_bytes_total,
            "max_pending_write_bytes": limits.max_pending_write_bytes,
            "max_pending_reqs": limits.max_pending_reqs,
            "max_filter_values_per_connection": limits.max_filter_values_per_connection,
            "channel_kinds": list(CHANNEL_KINDS),
            "state_kinds": list(CHANNEL_STATE_KINDS),
            "memory_kind": Kind.MEMORY,
        },
    }


def _response(
    status: int, reason: str, content_type: str, body: bytes, extra: dict[str, str] | None = None
) -> Response:
    headers = Headers({"Content-Type": content_type, "Content-Length": str(len(body))})
    for name, value in (extra or {}).items():
        headers[name] = value
    return Response(status, reason, headers, body)


def _json(status: int, reason: str, payload: dict[str, Any]) -> Response:
    return _response(status, reason, "application/json", orjson.dumps(payload))


async def readiness(relay: "Relay") -> Response:
    try:
        async with asyncio.timeout(READINESS_TIMEOUT_SECONDS):
            await relay.write_pool.fetchval("SELECT 1")
    except Exception as error:  # any failure means "not ready"; the reason is reported
        reason = str(error) or type(error).__name__
        return _json(503, "Service Unavailable", {"status": "unavailable", "error": reason})
    return _json(200, "OK", {"status": "ready"})


def make_process_request(
    relay: "Relay",
) -> Callable[[ServerConnection, Request], Awaitable[Response | None]]:
    async def process_request(connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/_readiness":
            return await readiness(relay)
        if path == "/_liveness":
            return _json(200, "OK", {"status": "alive"})
        if path != "/":
            return _response(404, "Not Found", "text/plain", b"Not found\n")
        if "websocket" in request.headers.get("Upgrade", "").lower():
            await relay.handshakes.wait_turn()
            return None
        if "application/nostr+json" in request.headers.get("Accept", ""):
            return _response(
                200,
                "OK",
                "application/nostr+json",
                orjson.dumps(relay_information(relay)),
                {
                    "Access-Control-Allow-Origin": "*",
                    "Access-Control-Allow-Headers": "*",
                    "Access-Control-Allow-Methods": "GET",
                },
            )
        return _response(200, "OK", "text/plain", BANNER.encode())

    return process_request
