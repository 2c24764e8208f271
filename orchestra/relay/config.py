"""Relay configuration from environment variables and `serve` flags (protocol.md §1.1, §13)."""

import logging
import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from orchestra.nostr.keys import Keys

log = logging.getLogger("buzz.relay")

# Upstream relay settings that mean nothing here; named in one log line when set (§1.1).
IGNORED_VARIABLES = (
    "RELAY_URL",
    "RELAY_OWNER_PUBKEY",
    "BUZZ_REQUIRE_RELAY_MEMBERSHIP",
    "BUZZ_ALLOW_NIP_OA_AUTH",
    "REDIS_URL",
    "BUZZ_DOMAIN",
    "BUZZ_REQUIRE_AUTH_TOKEN",
    "BUZZ_AUTO_MIGRATE",
    "BUZZ_HEALTH_PORT",
    "BUZZ_METRICS_PORT",
    "BUZZ_CORS_ORIGINS",
    "RUST_LOG",
)
IGNORED_PREFIXES = ("BUZZ_S3_", "BUZZ_MEDIA_", "BUZZ_GIT_", "BUZZ_RATE_LIMIT_")


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the variable and value."""


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    max_message_bytes: int = Field(262_144, gt=0)
    max_event_bytes: int = Field(131_072, gt=0)
    max_subscriptions: int = Field(1024, gt=0)
    max_limit: int = Field(500, ge=0)
    max_filters_per_req: int = 20
    max_filter_values: int = 1000
    max_subid_length: int = 64
    created_at_lower_limit: int = 3600
    created_at_upper_limit: int = 900
    auth_window_seconds: int = 600
    max_pending_send_bytes: int = Field(8 * 1024 * 1024, gt=0)
    max_pending_send_bytes_total: int = Field(128 * 1024 * 1024, gt=0)  # all connections
    # Limits against hostile load (docs/decisions.md, "Relay under hostile load").
    max_connections: int = Field(4096, gt=0)
    max_connections_per_ip: int = Field(1024, gt=0)
    auth_timeout_seconds: float = Field(60.0, gt=0)
    max_events_per_second: int = Field(1000, gt=0)  # per pubkey; bursts of 5 seconds' worth
    max_event_bytes_per_second: int = Field(4 * 1024 * 1024, gt=0)  # per pubkey; 4 seconds
    max_pending_write_bytes: int = Field(64 * 1024, gt=0)  # per connection
    max_queued_write_bytes: int = Field(64 * 1024 * 1024, gt=0)  # whole relay
    max_pending_reqs: int = Field(16, gt=0)  # per connection, waiting for stored results
    max_filter_values_per_connection: int = Field(100_000, gt=0)  # over all its subscriptions

    @property
    def events_burst(self) -> int:
        return 5 * self.max_events_per_second

    @property
    def event_bytes_burst(self) -> int:
        return 4 * self.max_event_bytes_per_second


class RelayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    host: str
    port: int = Field(ge=0, le=65535)
    database_url: str | None
    embedded_db_dir: str | None = None
    # None means "any well-formed ws:// or wss:// URL" (unset or `*`).
    public_urls: tuple[str, ...] | None = None
    private_key: str | None = Field(None, repr=False)
    name: str = "Buzz testbed relay"
    description: str = "Buzz-compatible relay for Buzz Orchestra"
    ttl_sweep_secs: float = Field(30.0, gt=0)
    log_level: str = "info"
    limits: Limits = Limits()


def parse_bind(value: str, source: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"{source}: expected host:port, got {value!r}")
    return host.strip("[]"), int(port_text)


def parse_public_urls(value: str | None) -> tuple[str, ...] | None:
    if value is None or value.strip() in ("", "*"):
        return None
    return tuple(url.strip() for url in value.split(",") if url.strip())


def _int_env(env: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    text = env.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{name}: expected an integer, got {text!r}") from None
    if value < minimum:
        raise ConfigError(f"{name}: must be at least {minimum}, got {text!r}")
    return value


def _float_env(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if text is None or text == "":
        return default
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{name}: expected a number, got {text!r}") from None
    if value <= 0:
        raise ConfigError(f"{name}: must be positive, got {text!r}")
    return value


# Limit overrides: variable -> (field, minimum). Unset variables keep the `Limits` defaults.
LIMIT_VARIABLES = {
    "BUZZ_RELAY_MAX_MESSAGE_BYTES": ("max_message_bytes", 1),
    "BUZZ_RELAY_MAX_EVENT_BYTES": ("max_event_bytes", 1),
    "BUZZ_RELAY_MAX_SUBSCRIPTIONS": ("max_subscriptions", 1),
    "BUZZ_RELAY_MAX_LIMIT": ("max_limit", 0),
    "BUZZ_RELAY_MAX_CONNECTIONS": ("max_connections", 1),
    "BUZZ_RELAY_MAX_CONNECTIONS_PER_IP": ("max_connections_per_ip", 1),
    "BUZZ_RELAY_MAX_EVENTS_PER_SECOND": ("max_events_per_second", 1),
    "BUZZ_RELAY_MAX_EVENT_BYTES_PER_SECOND": ("max_event_bytes_per_second", 1),
    "BUZZ_RELAY_MAX_PENDING_SEND_BYTES": ("max_pending_send_bytes", 1),
    "BUZZ_RELAY_MAX_PENDING_SEND_BYTES_TOTAL": ("max_pending_send_bytes_total", 1),
    "BUZZ_RELAY_MAX_PENDING_WRITE_BYTES": ("max_pending_write_bytes", 1),
    "BUZZ_RELAY_MAX_QUEUED_WRITE_BYTES": ("max_queued_write_bytes", 1),
    "BUZZ_RELAY_MAX_PENDING_REQS": ("max_pending_reqs", 1),
    "BUZZ_RELAY_MAX_FILTER_VALUES_PER_CONNECTION": ("max_filter_values_per_connection", 1),
}


def load_limits(env: Mapping[str, str]) -> Limits:
    overrides: dict[str, object] = {
        field: _int_env(env, name, 0, minimum)
        for name, (field, minimum) in LIMIT_VARIABLES.items()
        if env.get(name)
    }
    if env.get("BUZZ_RELAY_AUTH_TIMEOUT_SECS"):
        overrides["auth_timeout_seconds"] = _float_env(env, "BUZZ_RELAY_AUTH_TIMEOUT_SECS", 0)
    return Limits(**overrides)


def load_config(
    env: Mapping[str, str] | None = None,
    *,
    bind: str | None = None,
    database_url: str | None = None,
    public_urls: str | None = None,
    embedded_db_dir: str | None = None,
) -> RelayConfig:
    """Build the configuration; flags (keyword arguments) override environment variables."""
    env = os.environ if env is None else env
    bind_source = "--bind" if bind is not None else "BUZZ_BIND_ADDR"
    host, port = parse_bind(bind or env.get("BUZZ_BIND_ADDR") or "0.0.0.0:3000", bind_source)
    url = database_url or env.get("BUZZ_DATABASE_URL") or env.get("DATABASE_URL") or None
    if url is None and embedded_db_dir is None:
        raise ConfigError(
            "BUZZ_DATABASE_URL: not set (give --database-url, BUZZ_DATABASE_URL or --embedded-db DIR)"
        )
    private_key = env.get("BUZZ_RELAY_PRIVATE_KEY") or None
    if private_key is not None:
        try:
            Keys.parse(private_key)
        except ValueError:
            # Never echo the value: it is a secret.
            raise ConfigError("BUZZ_RELAY_PRIVATE_KEY: not a 64-hex or nsec secret key") from None
    limits = load_limits(env)
    return RelayConfig(
        host=host,
        port=port,
        database_url=None if embedded_db_dir else url,
        embedded_db_dir=embedded_db_dir,
        public_urls=parse_public_urls(
            public_urls if public_urls is not None else env.get("BUZZ_RELAY_PUBLIC_URLS")
        ),
        private_key=private_key,
        name=env.get("BUZZ_RELAY_NAME") or "Buzz testbed relay",
        description=env.get("BUZZ_RELAY_DESCRIPTION") or "Buzz-compatible relay for Buzz Orchestra",
        ttl_sweep_secs=_float_env(env, "BUZZ_RELAY_TTL_SWEEP_SECS", 30.0),
        log_level=(env.get("BUZZ_RELAY_LOG_LEVEL") or "info").lower(),
        limits=limits,
    )


def ignored_variables_set(env: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    return sorted(
        name for name in env if name in IGNORED_VARIABLES or name.startswith(IGNORED_PREFIXES)
    )
