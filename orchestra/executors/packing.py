"""Directories as bytes between the driver and a node: tasks go out, trial directories come
back (scale-out.md §2, §5). A gzip-compressed tar stream; unpacking refuses links and paths
that leave the target (the `data` filter)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

#: A packed trial directory larger than this is refused by its node (scale-out.md §5 step 4).
MAX_PACKED_TRIAL_BYTES = 512 * 1024 * 1024


class PackTooLarge(Exception):
    """The packed directory would exceed the limit; the message names both sizes."""


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
        archive.extractall(target, filter="data")
