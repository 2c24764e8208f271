"""The writer's express lane (storage/express.py, docs/decisions.md D14): an occasional
writer's cheap event commits while the main lane is busy with a batch; channel operations run
with the express lane idle."""

import asyncio

from orchestra.relay.storage.write_queue import FairQueue

# Too costly for the express lane: an event with these tags always takes the main lane.
HEAVY = [["t", f"tag {n}"] for n in range(200)]


class Gates:
    """Holds the writer's batches that contain given events until each is released; logs
    ("enter"|"exit", the batch's first event id) of every batch."""

    def __init__(self, relay, monkeypatch) -> None:
        self.entered: dict[str, asyncio.Event] = {}
        self.released: dict[str, asyncio.Event] = {}
        self.log: list[tuple[str, str]] = []
        process = relay.writer._process

        async def held(batch):
            ids = [job.event.id for job in batch if hasattr(job, "event")]
            first = ids[0] if ids else "sweep"
            self.log.append(("enter", first))
            for event_id in ids:
                if event_id in self.released:
                    self.entered[event_id].set()
                    await self.released[event_id].wait()
            await process(batch)
            self.log.append(("exit", first))

        monkeypatch.setattr(relay.writer, "_process", held)

    def hold(self, event_id: str) -> None:
        self.entered[event_id], self.released[event_id] = asyncio.Event(), asyncio.Event()


async def test_an_occasional_writer_does_not_wait_for_the_batch_in_progress(
    relay_with, connect, monkeypatch
):
    relay = await relay_with()
    flood, probe = await connect(relay.url), await connect(relay.url)
    slow = flood.sign(1, "a batch that takes long", HEAVY)
    gates = Gates(relay, monkeypatch)
    gates.hold(slow.id)
    await flood.send(["EVENT", slow.to_dict()])
    await gates.entered[slow.id].wait()  # the main lane is busy with the flood's batch
    note = probe.sign(1, "now and then")
    assert await probe.publish(note) == ["OK", note.id, True, ""]
    # The flood's next event queues behind its own batch in the main lane.
    after = flood.sign(1, "behind the slow one")
    await flood.send(["EVENT", after.to_dict()])
    gates.released[slow.id].set()
    assert [await flood.next(lambda f: f[0] == "OK") for _ in range(2)] == [
        ["OK", slow.id, True, ""],
        ["OK", after.id, True, ""],
    ]
    events, _ = await probe.req("all", {"ids": [slow.id, note.id, after.id]})
    assert len(events) == 3


async def test_a_channel_operation_waits_for_the_express_batch_in_progress(
    relay_with, connect, monkeypatch
):
    relay = await relay_with()
    owner, flood, member = [await connect(relay.url) for _ in range(3)]
    channel = await owner.create_channel("open")
    await member.ok(9021, "", [["h", channel]])  # joins
    slow = flood.sign(1, "keeps the main lane busy", HEAVY)
    message = member.sign(9, "sent before the removal", [["h", channel]])
    gates = Gates(relay, monkeypatch)
    for event in (slow, message):
        gates.hold(event.id)
    await flood.send(["EVENT", slow.to_dict()])
    await gates.entered[slow.id].wait()
    await member.send(["EVENT", message.to_dict()])
    await gates.entered[message.id].wait()  # the member's message is in an express batch
    closing = asyncio.Event()
    close = relay.writer._express.close

    async def watched_close():
        closing.set()
        await close()

    monkeypatch.setattr(relay.writer._express, "close", watched_close)
    removal = owner.sign(9001, "", [["h", channel], ["p", member.keys.pubkey]])
    await owner.send(["EVENT", removal.to_dict()])
    gates.released[slow.id].set()  # the main lane's next batch is the removal
    await closing.wait()
    assert ("enter", removal.id) not in gates.log  # it waits for the express batch
    gates.released[message.id].set()
    assert await member.next(lambda f: f[0] == "OK") == ["OK", message.id, True, ""]
    reply = await owner.next(lambda f: f[0] == "OK" and f[1] == removal.id)
    assert reply == ["OK", removal.id, True, ""]
    assert gates.log.index(("exit", message.id)) < gates.log.index(("enter", removal.id))


def test_fair_queue_gives_each_source_turning_busy_one_job_ahead_of_the_others():
    queue: FairQueue[tuple[str, int]] = FairQueue(quantum=10)
    for source in "abcde":  # five floods start at once ...
        for n in range(20):
            queue.put(source, (f"{source}{n}", 1))
    queue.put("probe", ("p0", 1))  # ... and an occasional writer right after them

    batch = [name for name, _ in queue.take(100, 12, lambda job: job[1])]
    assert batch[:6] == ["a0", "b0", "c0", "d0", "e0", "p0"]
    assert len(batch) == 12
