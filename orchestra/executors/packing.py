"""Directories as bytes between the driver and a node: tasks go out, trial directories come
back (scale-out.md §2, §5). A gzip-compressed tar stream; unpacking refuses links and paths
that leave the target (the `data` filter)."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

#: A packed trial directory larger than this is refused by its node (scale-out.md §5 step 4).
MAX_PACKED_TRIAL_BYTES = 512 * 1024 * 1024


class PackTooLarge(Exception):
    """The packed directory would exceed the limit; the message names both sizes."""


class UnsafeMember(tarfile.TarError):
    """A member the `data` filter refuses, on a Python without extraction filters."""


class _Capped(io.RawIOBase):
    """An in-memory sink that stops at `limit` bytes (the tar is never held in full above it)."""

    def __init__(self, limit: int) -> None:
        self.buffer = bytearray()
        self.limit = limit

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self.buffer += data
        if len(self.buffer) > self.limit:
            raise PackTooLarge(f"packed size exceeds {self.limit} bytes")
        return len(data)


def pack_directory(directory: Path, *, limit: int | None = None) -> bytes:
    """`directory`'s contents (not the directory itself) as a gzipped tar; `PackTooLarge`
    when the stream would pass `limit` bytes."""
    sink = _Capped(limit if limit is not None else 1 << 62)
    with tarfile.open(fileobj=sink, mode="w:gz", compresslevel=6) as archive:
        for child in sorted(directory.iterdir()):
            archive.add(child, arcname=child.name)
    return bytes(sink.buffer)


def unpack_directory(data: bytes, target: Path) -> None:
    """Unpack a `pack_directory` stream into `target` (created; must not exist)."""
    target.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(target, filter="data")
        else:  # Python 3.11.0-3.11.3 (Debian bookworm's 3.11.2): no extraction filters
            archive.extractall(target, members=_data_members(archive, target))


def _data_members(archive: tarfile.TarFile, target: Path) -> Iterator[tarfile.TarInfo]:
    """The `data` filter's checks (PEP 706): regular files, directories and links that stay
    inside `target`; no setuid, setgid, sticky or group/other write bits."""
    root = os.path.realpath(target)

    def inside(path: str) -> bool:
        return os.path.commonpath([root, os.path.realpath(path)]) == root

    for member in archive.getmembers():
        destination = os.path.join(root, member.name)
        if os.path.isabs(member.name) or not inside(destination):
            raise UnsafeMember(f"{member.name!r} would be extracted outside the target")
        if member.issym():
            pointed = os.path.join(os.path.dirname(destination), member.linkname)
            if os.path.isabs(member.linkname) or not inside(pointed):
                raise UnsafeMember(f"{member.name!r} links outside the target")
        elif member.islnk():
            if os.path.isabs(member.linkname) or not inside(os.path.join(root, member.linkname)):
                raise UnsafeMember(f"{member.name!r} links outside the target")
        elif not (member.isfile() or member.isdir()):
            raise UnsafeMember(f"{member.name!r} is a special file")
        member.mode = (member.mode & 0o755) | (0o600 if member.isfile() else 0o700)
        member.uid, member.gid = os.getuid(), os.getgid()  # never chown to the archive's owner
        member.uname = member.gname = ""
        yield member
