"""Memory after a flood (protocol.md §13): freed memory goes back to the operating system, and
the cyclic garbage collector never pauses the relay for long.

A full collection traverses every tracked object: with 10,240 subscriptions of 20 filters
(~1 million objects) it took ~680 ms, all other clients waiting. So automatic full
collections are off; the young generations are still collected automatically (cheap), and
the housekeeping runs a full collection while the relay holds few objects (a traversal of a
few milliseconds: few subscriptions, connections and queued writes), spaced so that it takes
at most 0.5 % of the time. Some of a closed connection's objects form reference cycles
(asyncio's transport), so this is also what frees them.
"""

import ctypes
import ctypes.util
import functools
import gc
import logging
import time
from collections.abc import Callable

log = logging.getLogger("buzz.relay")

# Rough numbers of tracked objects each one holds, and the most a collection may traverse.
OBJECTS_PER_FILTER = 5
OBJECTS_PER_CONNECTION = 150
OBJECTS_PER_QUEUED_KIB = 5
FULL_COLLECTION_MAX_OBJECTS = 20_000
FULL_COLLECTION_SHARE = 0.005  # of the time, at most
_NEVER = 2**31 - 1


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


def manual_full_collections() -> None:
    """Freeze what start-up created (never garbage) and stop automatic full collections."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _NEVER)


class FullCollections:
    """When to run a full collection: the relay is quiet and the last one was short enough for
    its share of the time since."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last_end = clock()
        self._last_seconds = 0.0

    def due(self, filters: int, connections: int, queued_write_bytes: int) -> bool:
        objects = (
            OBJECTS_PER_FILTER * filters
            + OBJECTS_PER_CONNECTION * connections
            + OBJECTS_PER_QUEUED_KIB * queued_write_bytes // 1024
        )
        if objects > FULL_COLLECTION_MAX_OBJECTS:
            return False
        return self._clock() - self._last_end >= self._last_seconds / FULL_COLLECTION_SHARE

    def collect(self) -> None:
        started = self._clock()
        gc.collect()
        self._last_end = self._clock()
        self._last_seconds = self._last_end - started
