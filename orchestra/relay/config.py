"""Relay configuration from environment variables and `serve` flags (protocol.md §1.1, §13)."""

import logging
import os
from collections.abc import Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from orchestra.nostr.keys import Keys
from orchestra.settings import (
    InvalidValue,
    Setting,
    SettingError,
    comma_list,
    integer,
    positive_number,
    present,
    text,
)

log = logging.getLogger("buzz.relay")

T = TypeVar("T")

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


class ConfigError(SettingError):
    """A configuration value that cannot be used; the message names the variable and value
    (never a secret). `buzz-relay` exits 2 (protocol.md §1.2)."""

    exit_code = 2


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
    # Limits against hostile load (docs/decisions.md D15).
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


def host_port(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise InvalidValue(f"expected host:port, got {value!r}")
    return host.strip("[]"), int(port_text)


def public_url_list(value: str) -> tuple[str, ...] | None:
    """None (any well-formed URL) for an empty list or `*`."""
    if value.strip() in ("", "*"):
        return None
    return comma_list(value)


def secret_key(value: str) -> str:
    try:
        Keys.parse(value)
    except ValueError:
        # Never echo the value: it is a secret.
        raise InvalidValue("not a 64-hex or nsec secret key") from None
    return value


def _setting(
    variable: str,
    parse: Callable[[str], T],
    default: str | None = None,
    *,
    aliases: tuple[str, ...] = (),
    required: str = "not set",
    tidy: Callable[[str], str] | None = None,
) -> Setting[T]:
    """A relay setting: an empty value is unset, errors exit 2."""
    return Setting(
        variable,
        parse,
        default,
        aliases=aliases,
        tidy=tidy,
        empty_is_unset=True,
        required=required,
        error=ConfigError,
    )


BIND = _setting("BUZZ_BIND_ADDR", host_port, "0.0.0.0:3000")
DATABASE_URL = _setting(
    "BUZZ_DATABASE_URL",
    text,
    aliases=("DATABASE_URL",),
    required="not set (give --database-url, BUZZ_DATABASE_URL or --embedded-db DIR)",
)
PUBLIC_URLS = Setting("BUZZ_RELAY_PUBLIC_URLS", public_url_list, error=ConfigError)
PRIVATE_KEY = _setting("BUZZ_RELAY_PRIVATE_KEY", secret_key)
NAME = _setting("BUZZ_RELAY_NAME", text, "Buzz testbed relay")
DESCRIPTION = _setting("BUZZ_RELAY_DESCRIPTION", text, "Buzz-compatible relay for Buzz Orchestra")
TTL_SWEEP_SECS = _setting("BUZZ_RELAY_TTL_SWEEP_SECS", positive_number, "30")
LOG_LEVEL = _setting("BUZZ_RELAY_LOG_LEVEL", text, "info", tidy=str.lower)
AUTH_TIMEOUT_SECS = _setting("BUZZ_RELAY_AUTH_TIMEOUT_SECS", positive_number)


def _limit(variable: str, minimum: int = 1) -> Setting[int]:
    return _setting(variable, integer(minimum, show_as_written=True))


# Limit overrides: `Limits` field -> its setting. Unset ones keep the `Limits` defaults.
LIMIT_SETTINGS: dict[str, Setting[int] | Setting[float]] = {
    "max_message_bytes": _limit("BUZZ_RELAY_MAX_MESSAGE_BYTES"),
    "max_event_bytes": _limit("BUZZ_RELAY_MAX_EVENT_BYTES"),
    "max_subscriptions": _limit("BUZZ_RELAY_MAX_SUBSCRIPTIONS"),
    "max_limit": _limit("BUZZ_RELAY_MAX_LIMIT", minimum=0),
    "max_connections": _limit("BUZZ_RELAY_MAX_CONNECTIONS"),
    "max_connections_per_ip": _limit("BUZZ_RELAY_MAX_CONNECTIONS_PER_IP"),
    "max_events_per_second": _limit("BUZZ_RELAY_MAX_EVENTS_PER_SECOND"),
    "max_event_bytes_per_second": _limit("BUZZ_RELAY_MAX_EVENT_BYTES_PER_SECOND"),
    "max_pending_send_bytes": _limit("BUZZ_RELAY_MAX_PENDING_SEND_BYTES"),
    "max_pending_send_bytes_total": _limit("BUZZ_RELAY_MAX_PENDING_SEND_BYTES_TOTAL"),
    "max_pending_write_bytes": _limit("BUZZ_RELAY_MAX_PENDING_WRITE_BYTES"),
    "max_queued_write_bytes": _limit("BUZZ_RELAY_MAX_QUEUED_WRITE_BYTES"),
    "max_pending_reqs": _limit("BUZZ_RELAY_MAX_PENDING_REQS"),
    "max_filter_values_per_connection": _limit("BUZZ_RELAY_MAX_FILTER_VALUES_PER_CONNECTION"),
    "auth_timeout_seconds": AUTH_TIMEOUT_SECS,
}


def load_limits(env: Mapping[str, str]) -> Limits:
    overrides = {field: setting.get(env) for field, setting in LIMIT_SETTINGS.items()}
    return Limits.model_validate(
        {field: value for field, value in overrides.items() if value is not None}
    )


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
    host, port = BIND.parse_text(bind, "--bind") if bind else BIND.value(env)
    url = database_url or DATABASE_URL.get(env)
    if url is None and embedded_db_dir is None:
        DATABASE_URL.value(env)  # raises: not set
    return RelayConfig(
        host=host,
        port=port,
        database_url=None if embedded_db_dir else url,
        embedded_db_dir=embedded_db_dir,
        public_urls=PUBLIC_URLS.parse_text(public_urls, "--public-urls")
        if public_urls is not None
        else PUBLIC_URLS.get(env),
        private_key=PRIVATE_KEY.get(env),
        name=NAME.value(env),
        description=DESCRIPTION.value(env),
        ttl_sweep_secs=TTL_SWEEP_SECS.value(env),
        log_level=LOG_LEVEL.value(env),
        limits=load_limits(env),
    )


def ignored_variables_set(env: Mapping[str, str] | None = None) -> list[str]:
    return sorted(present(os.environ if env is None else env, IGNORED_VARIABLES, IGNORED_PREFIXES))
