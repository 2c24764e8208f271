"""The driver's mailbox (`UpdateSink`): a take acknowledges what the driver received, so a take
asked again after its reply was lost returns the same messages, and nothing twice after."""

import asyncio

from orchestra.executors.ray_executor import UpdateSink


async def test_a_take_asked_again_returns_what_was_not_acknowledged() -> None:
    sink = UpdateSink()
    await sink.put(("log", "one"))
    await sink.put(("log", "two"))
    assert await sink.take(0) == (2, [("log", "one"), ("log", "two")])
    # the reply was lost: the driver still has received nothing
    assert await sink.take(0) == (2, [("log", "one"), ("log", "two")])
    await sink.put(("log", "three"))
    assert await sink.take(2) == (3, [("log", "three")])


async def test_a_take_waits_for_a_message_after_the_acknowledged_ones() -> None:
    sink = UpdateSink()
    await sink.put(("log", "one"))
    assert await sink.take(0) == (1, [("log", "one")])
    waiting = asyncio.ensure_future(sink.take(1))
    await asyncio.sleep(0)  # let the take run until it waits
    assert not waiting.done()
    await sink.put(("log", "two"))
    assert await waiting == (2, [("log", "two")])
