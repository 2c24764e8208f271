"""The trial's channel subscription survives a relay restart and reports a dead relay (§7.11)."""

import asyncio
import time

import pytest

from orchestra.buzz import BuzzClient
from orchestra.nostr.keys import Keys
from orchestra.trial import live as live_module
from orchestra.trial.observer import ChannelObserver

pytestmark = pytest.mark.slow


async def wait_for(condition, changed: asyncio.Event, seconds: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        remaining = deadline - asyncio.get_running_loop().time()
        assert remaining > 0, "condition not reached"
        changed.clear()
        try:
            await asyncio.wait_for(changed.wait(), remaining)
        except TimeoutError:
            pass


async def test_resubscribes_after_restart_then_fails_when_relay_is_gone(
    start_relay, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A restart of the relay process may take seconds on a loaded machine: be patient until
    # the relay is gone for good, then shorten the deadline so the failure comes quickly.
    monkeypatch.setattr(live_module, "RESUBSCRIBE_DEADLINE_SECONDS", 60.0)
    monkeypatch.setattr(live_module, "RESUBSCRIBE_BACKOFF_SECONDS", 0.2)
    relay = start_relay()
    changed = asyncio.Event()
    async with BuzzClient.from_keys(relay.url, Keys.generate()) as user:
        channel = (await user.channels_create(name="obs", visibility="private"))["channel_id"]
        observer = ChannelObserver(user, channel, int(time.time()) - 5, changed.set)
        await observer.start()
        first = (await user.messages_send(channel=channel, content="one"))["event_id"]
        await wait_for(lambda: first in observer.events, changed)
        await asyncio.to_thread(relay.restart)
        second = (await user.messages_send(channel=channel, content="two"))["event_id"]
        await wait_for(lambda: second in observer.events, changed)
        assert observer.arrival[first] == 1 and observer.arrival[second] == 2
        assert observer.failure is None
        monkeypatch.setattr(live_module, "RESUBSCRIBE_DEADLINE_SECONDS", 1.5)
        await asyncio.to_thread(relay.stop)
        await wait_for(lambda: observer.failure is not None, changed)
        assert "not re-established within 1.5 s" in observer.failure
        await observer.close()
