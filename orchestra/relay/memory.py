"""Giving freed memory back to the operating system after a flood (protocol.md §13)."""

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger("buzz.relay")


@functools.cache
def _malloc_trim() -> "ctypes._NamedFuncPointer | None":
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim  # glibc only
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Ask the C allocator to return free heap pages; glibc otherwise keeps the high-water mark
    of a flood resident. False where the allocator has no such call (e.g. musl)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
