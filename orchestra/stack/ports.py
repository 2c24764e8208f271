"""Who holds a local TCP port (orchestrator.md §5.4 busy-port message)."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if (
                len(fields) > 9
                and fields[3] == "0A"
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                inodes.add(fields[9])
    return inodes


def port_holder(port: int) -> tuple[str, int] | None:
    """(process name, pid) listening on `port`, when the operating system tells (Linux)."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in wanted:
                    name = (proc / "comm").read_text().strip()
                    return name, int(proc.name)
        except OSError:
            continue
    return None


def busy_port_message(host: str, port: int) -> str:
    holder = port_holder(port)
    who = f"{holder[0]} (pid {holder[1]})" if holder else "another process"
    return f"{host}:{port} is in use by {who}; stop it or choose another port with --relay-port"


def free_port(host: str) -> int:
    """A TCP port the kernel says is free on `host` now (a Ray node's embedded relay binds it
    right after; scale-out.md §4)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
    return port
