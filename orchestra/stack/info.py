"""What the rest of the orchestrator needs to know about a running stack (§5.1)."""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

from orchestra.documents.enums import StackMode
from orchestra.documents.job import StackRecord

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


def http_url_of(ws_url: str) -> str:
    """Same authority, `ws`→`http`, `wss`→`https`."""
    parts = urlsplit(ws_url)
    scheme = "https" if parts.scheme == "wss" else "http"
    return urlunsplit((scheme, parts.netloc, "", "", ""))


def docker_reachable_url(ws_url: str) -> str:
    """The URL with a loopback host replaced by `host.docker.internal` (docker env, §5.1)."""
    parts = urlsplit(ws_url)
    if parts.hostname not in {h.strip("[]") for h in LOOPBACK_HOSTS}:
        return ws_url
    netloc = "host.docker.internal" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def scripts_dir() -> Path:
    """The scripts directory of the orchestrator's own Python environment."""
    return Path(sysconfig.get_path("scripts"))


@dataclass(frozen=True)
class StackInfo:
    mode: StackMode
    relay_ws_url: str  # what the orchestrator dials
    agent_relay_url: str  # what agents get
    database_url: str | None = None  # never written to any file (may carry a password)

    @property
    def relay_http_url(self) -> str:
        return http_url_of(self.relay_ws_url)

    @property
    def database_socket_dir(self) -> Path | None:
        """The directory of the database's Unix socket, when it is reached through one."""
        if self.database_url is None:
            return None
        hosts = parse_qs(urlsplit(self.database_url).query).get("host", [])
        return Path(hosts[0]) if hosts and hosts[0].startswith("/") else None

    def config_record(self) -> StackRecord:
        """The job config's `stack` object (§10.2)."""
        return StackRecord(
            mode=self.mode,
            relay_ws_url=self.relay_ws_url,
            relay_http_url=self.relay_http_url,
            agent_relay_url=self.agent_relay_url,
            database=self.database_url is not None,
        )
