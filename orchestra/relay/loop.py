"""The relay's event loop: each pass handles at most `MAX_READY_PER_PASS` ready sockets.

asyncio's epoll selector returns every ready socket at once, and one pass of the loop runs all
their callbacks, then all the tasks they woke: when a thousand connections close together (or
a thousand handshakes arrive) one pass took 100-300 ms, and a client whose frame arrived
meanwhile waited for all of it. With `maxevents` capped, the kernel hands out the ready sockets
in turns (epoll re-queues a reported level-triggered socket behind the others), so a pass
holds a bounded share of any burst and every socket comes up within a few passes.
"""

import asyncio
import math
import select
import selectors
from typing import cast

MAX_READY_PER_PASS = 64


class TakingTurnsEpollSelector(selectors.EpollSelector):
    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            wait = -1.0
        elif timeout <= 0:
            wait = 0.0
        else:  # epoll_wait has a resolution of 1 ms: round up, to wait at least `timeout`
            wait = math.ceil(timeout * 1e3) * 1e-3
        epoll = cast(select.epoll, self._selector)  # type: ignore[attr-defined]
        keys = self.get_map()
        ready: list[tuple[selectors.SelectorKey, int]] = []
        try:
            fd_events = epoll.poll(wait, max(1, min(len(keys), MAX_READY_PER_PASS)))
        except InterruptedError:
            return ready
        for fd, event in fd_events:
            events = 0
            if event & ~select.EPOLLIN:
                events |= selectors.EVENT_WRITE
            if event & ~select.EPOLLOUT:
                events |= selectors.EVENT_READ
            key = keys.get(fd)
            if key is not None:
                ready.append((key, events & key.events))
        return ready


def new_event_loop() -> asyncio.AbstractEventLoop:
    if not hasattr(selectors, "EpollSelector"):  # not Linux: the default loop
        return asyncio.new_event_loop()
    return asyncio.SelectorEventLoop(TakingTurnsEpollSelector())
