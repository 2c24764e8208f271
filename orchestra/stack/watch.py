"""The running stack, watched and healed while trials run (orchestrator.md §5.1 "Health").

The watch waits on the stack's own processes (the embedded relay and PostgreSQL: a death is seen
the moment it happens) and polls `/_readiness` (which also checks the database) for the stacks
it has no processes of. When the stack stops answering it ends the current `HealthySpell`: every trial
that runs through it fails `StackUnavailable` at once (`during`), the stack is restarted, and
the trials started afterwards belong to a fresh spell. A stack that cannot come back is
`failure`: the job starts nothing more and the command ends with exit 2 (resumable).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar

from orchestra.errors import TrialFailure
from orchestra.processes import wait_gone
from orchestra.stack.info import StackInfo
from orchestra.stack.readiness import StackError, probe_relay

T = TypeVar("T")
PROBE_INTERVAL_SECONDS = 1.0
PROBE_SECONDS = 5.0
#: readiness failing this long (not a single slow probe on a loaded machine) is a dead stack
UNHEALTHY_SECONDS = 10.0


class StackUnavailable(TrialFailure):
    """The relay or database stopped answering during the trial (§12)."""


class HealableStack(Protocol):
    """What the watch needs of a running stack."""

    @property
    def info(self) -> StackInfo: ...

    def processes(self) -> Mapping[int, str]:
        """The stack's processes (pid → name) whose exit means the stack died; empty for a
        stack this process does not run."""

    async def restart(self) -> None:
        """Bring the stack back; `StackError` when it cannot."""


class HealthySpell:
    """One spell of the stack being up; `happened` is set when it ends."""

    def __init__(self) -> None:
        self.happened = asyncio.Event()
        self.reason = ""

    def end(self, reason: str) -> None:
        self.reason = reason
        self.happened.set()


async def during(spell: HealthySpell, work: Awaitable[T]) -> T:
    """`work`, unless the stack fails first: then it is cancelled and `StackUnavailable`
    raised. A failure of `work` once the stack has failed is the stack's too (a relay call,
    or an agent that lost its relay)."""
    if spell.happened.is_set():
        if asyncio.iscoroutine(work):
            work.close()
        raise StackUnavailable(spell.reason)
    task = asyncio.ensure_future(work)
    ended = asyncio.ensure_future(spell.happened.wait())
    try:
        await asyncio.wait([task, ended], return_when=asyncio.FIRST_COMPLETED)
    finally:
        ended.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    if task.cancelled() and spell.happened.is_set():
        raise StackUnavailable(spell.reason)
    try:
        return task.result()
    except Exception as error:
        if spell.happened.is_set() and not isinstance(error, StackUnavailable):
            raise StackUnavailable(spell.reason) from error
        raise


class StackWatch:
    """Watches one stack for the whole command; `StackWatch()` watches nothing (tests)."""

    def __init__(self, stack: HealableStack | None = None) -> None:
        self.stack = stack
        #: told one line per event (the console, the running job's log)
        self.listeners: list[Callable[[str], None]] = []
        self.current = HealthySpell()
        self.failure: str | None = None
        self._usable = asyncio.Event()
        self._usable.set()
        self.after_restart: list[Callable[[], Awaitable[None]]] = []
        self.outages = 0

    def notify(self, line: str) -> None:
        for listener in self.listeners:
            listener(line)

    async def usable(self) -> bool:
        """Wait while the stack is being restarted; False once it could not come back."""
        await self._usable.wait()
        return self.failure is None

    async def run(self) -> None:
        """Watch and heal until cancelled or the stack cannot come back."""
        if self.stack is None:
            return
        while True:
            reason = await self._until_down(self.stack)
            self.outages += 1
            self._usable.clear()
            self.current.end(reason)
            self.notify(f"stack unavailable: {reason}; restarting it")
            started = time.monotonic()
            try:
                await self.stack.restart()
                for hook in self.after_restart:
                    await hook()
            except (StackError, OSError) as error:
                self.failure = f"{reason}; restarting it failed: {error}"
                self.notify(f"stack could not be restarted: {error}")
                self._usable.set()
                return
            self.current = HealthySpell()
            self.notify(f"stack restarted in {time.monotonic() - started:.1f} s")
            self._usable.set()

    async def _until_down(self, stack: HealableStack) -> str:
        """The reason the stack is down: a process of it exited, or readiness failed for
        `UNHEALTHY_SECONDS`."""
        exits = {
            asyncio.ensure_future(wait_gone([pid])): f"{name} (pid {pid}) exited"
            for pid, name in stack.processes().items()
        }
        failing_since: float | None = None
        try:
            while True:
                if exits:
                    await asyncio.wait(
                        exits, timeout=PROBE_INTERVAL_SECONDS, return_when=asyncio.FIRST_COMPLETED
                    )
                else:
                    await asyncio.sleep(PROBE_INTERVAL_SECONDS)
                answered = await probe_relay(stack.info.relay_http_url, PROBE_SECONDS)
                exited = [reason for waiter, reason in exits.items() if waiter.done()]
                if exited:
                    return exited[0]
                if answered:
                    failing_since = None
                    continue
                now = time.monotonic()
                failing_since = now if failing_since is None else failing_since
                if now - failing_since >= UNHEALTHY_SECONDS:
                    return (
                        f"relay at {stack.info.relay_http_url} not ready for "
                        f"{UNHEALTHY_SECONDS:g} s"
                    )
        finally:
            for waiter in exits:
                waiter.cancel()


@asynccontextmanager
async def watching(
    stack: HealableStack, listener: Callable[[str], None] | None = None
) -> AsyncIterator[StackWatch]:
    """The stack watched (and healed) while the jobs run; the watch ends before the stack
    is stopped, which is no death. `listener` is told each event."""
    watch = StackWatch(stack)
    if listener is not None:
        watch.listeners.append(listener)
    task = asyncio.create_task(watch.run(), name="stack-watch")
    try:
        yield watch
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
