"""Channel TTL sweep (protocol.md §9.10), in-process with a controllable clock."""

import asyncio
import time
import uuid

from orchestra.relay.config import load_config
from orchestra.relay.server import Relay
from orchestra.relay.storage.writes import Writer


class FakeClock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


async def test_ttl_sweep_archives_idle_channel_only(embedded_pg, connect):
    url = await embedded_pg.create_database()
    config = load_config(
        {"BUZZ_RELAY_TTL_SWEEP_SECS": "0.05"}, bind="127.0.0.1:0", database_url=url
    )
    clock = FakeClock()
    relay = Relay(config, url, clock=clock)
    await relay.start()
    try:
        owner = await connect(relay.url)
        idle, active = str(uuid.uuid4()), str(uuid.uuid4())
        for channel in (idle, active):
            await owner.ok(9007, "", [["h", channel], ["name", "temp"], ["ttl", "60"]])
        now = int(time.time())
        await owner.ok(9, "keeps it alive", [["h", active]], created_at=now + 50)
        await owner.req("meta", {"kinds": [39000], "#d": [idle, active]})
        clock.offset = 61
        archived = await owner.next_event("meta")
        assert archived["tags"][0] == ["d", idle]
        assert ["archived", "true"] in archived["tags"]
        assert ["ttl", "60"] in archived["tags"]
        events, _ = await owner.req("active", {"kinds": [39000], "#d": [active]})
        assert ["archived", "true"] not in events[0]["tags"]
        reply = await owner.publish(owner.sign(9, "too late", [["h", idle]]))
        assert reply[2:] == [False, "invalid: channel is archived"]
        clock.offset = 111
        archived = await owner.next_event("meta")
        assert archived["tags"][0] == ["d", active]
        # Unarchiving resets the activity clock, so the channel stays open until idle again.
        await owner.ok(9002, "", [["h", idle], ["archived", "false"]])
        unarchived = await owner.next_event("meta")
        assert (
            unarchived["tags"][0] == ["d", idle] and ["archived", "true"] not in unarchived["tags"]
        )
    finally:
        await relay.stop()


async def test_a_stopped_writer_returns_once_what_was_queued_is_done(embedded_pg):
    # Stop's wake-up was consumed by the batch that took the queued sweep, and the writer then
    # waited for more work forever: `Relay.stop` hung (seen in the suite, 50 ms sweeps).
    url = await embedded_pg.create_database()
    relay = Relay(load_config({}, bind="127.0.0.1:0", database_url=url), url)
    await relay.start()
    try:
        writer = Writer(relay.write_pool, relay.cache, relay.fanout, relay.relay_keys)
        running = asyncio.create_task(writer.run())
        swept = writer.sweep_ttl()
        writer.stop()
        async with asyncio.timeout(10):
            assert (await swept).accepted
            await running
    finally:
        await relay.stop()
