"""The stack watch (orchestra.stack.watch; orchestrator.md §5.1 "Health") against a stand-in
stack: a process whose exit is a death, and a restart that works or does not."""

import asyncio
import subprocess
import sys
from collections.abc import Mapping

import pytest

from orchestra.stack.info import StackInfo
from orchestra.stack.readiness import StackError
from orchestra.stack.watch import HealthySpell, StackUnavailable, StackWatch, during


class StandInStack:
    """`processes()` is one sleeping child; `restart()` starts another (or fails)."""

    def __init__(self, port: int, *, restarts: bool = True) -> None:
        url = f"ws://127.0.0.1:{port}"
        self.info = StackInfo("embedded", url, url)
        self.restarts = restarts
        self.restarted = 0
        self.process = self._spawn()

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])

    def processes(self) -> Mapping[int, str]:
        return {self.process.pid: "stand-in"}

    async def restart(self) -> None:
        self.restarted += 1
        if not self.restarts:
            raise StackError("it stays down")
        self.process = self._spawn()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


async def test_during_returns_the_work_or_fails_the_moment_the_stack_does() -> None:
    outage = HealthySpell()
    assert await during(outage, asyncio.sleep(0, "done")) == "done"
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    waiting = asyncio.ensure_future(during(outage, forever()))
    await asyncio.sleep(0)
    outage.end("relay gone")
    with pytest.raises(StackUnavailable, match="relay gone"):
        await waiting
    assert cancelled.is_set()  # the work was cancelled, not left running
    with pytest.raises(StackUnavailable):  # once down, a step fails before it starts
        await during(outage, asyncio.sleep(0))


async def test_a_failure_after_the_stack_went_down_is_the_stacks() -> None:
    outage = HealthySpell()

    async def fails_after_the_outage() -> None:
        outage.end("database gone")
        raise OSError("connection reset")

    with pytest.raises(StackUnavailable, match="database gone"):
        await during(outage, fails_after_the_outage())
    with pytest.raises(ValueError):  # a failure of its own while the stack is up stays one
        await during(HealthySpell(), asyncio.to_thread(int, "x"))


async def test_a_death_ends_the_outage_and_the_stack_is_restarted(free_port: int) -> None:
    stack = StandInStack(free_port)
    watch = StackWatch(stack)
    lines: list[str] = []
    watch.listeners.append(lines.append)
    first = watch.current
    task = asyncio.create_task(watch.run())
    try:
        dead = stack.process.pid
        stack.kill()
        await asyncio.wait_for(first.happened.wait(), 10)
        assert first.reason == f"stand-in (pid {dead}) exited"
        assert await asyncio.wait_for(watch.usable(), 10)
        assert stack.restarted == 1 and watch.current is not first
        assert not watch.current.happened.is_set() and watch.failure is None
        assert lines[0].startswith("stack unavailable: stand-in") and "restarted" in lines[1]
    finally:
        task.cancel()
        stack.kill()


async def test_a_stack_that_cannot_come_back_is_a_failure(free_port: int) -> None:
    stack = StandInStack(free_port, restarts=False)
    watch = StackWatch(stack)
    task = asyncio.create_task(watch.run())
    stack.kill()
    await asyncio.wait_for(task, 10)
    assert not await watch.usable()
    assert watch.failure is not None and "it stays down" in watch.failure
