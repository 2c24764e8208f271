"""The relay's event loop hands out ready sockets in turns (relay/loop.py)."""

import selectors
import socket

import pytest

from orchestra.relay.loop import MAX_READY_PER_PASS, TakingTurnsEpollSelector, new_event_loop

pytestmark = pytest.mark.skipif(
    not hasattr(selectors, "EpollSelector"), reason="epoll is Linux only"
)


def test_a_pass_gets_a_bounded_share_of_ready_sockets_and_every_socket_its_turn():
    count = MAX_READY_PER_PASS + 36
    pairs = [socket.socketpair() for _ in range(count)]
    selector = TakingTurnsEpollSelector()
    try:
        for reader, writer in pairs:
            writer.send(b"x")  # every reader is ready and stays so (level-triggered)
            selector.register(reader, selectors.EVENT_READ)
        first = {key.fileobj for key, _ in selector.select(0)}
        second = {key.fileobj for key, _ in selector.select(0)}
        assert len(first) == MAX_READY_PER_PASS
        # The ones left out come first in the next pass: none waits more than one pass here.
        assert first | second == {reader for reader, _ in pairs}
    finally:
        selector.close()
        for reader, writer in pairs:
            reader.close()
            writer.close()


def test_the_relay_loop_uses_the_selector():
    loop = new_event_loop()
    try:
        assert isinstance(loop._selector, TakingTurnsEpollSelector)  # type: ignore[attr-defined]
    finally:
        loop.close()
