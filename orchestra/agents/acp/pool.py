"""The agent process pool (agent-harness.md §1.8): spawning, initializing, respawning."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from orchestra.agents.acp.acp_client import BridgeClient
from orchestra.agents.acp.config import AcpConfig
from orchestra.agents.acp.eventlog import EventLog
from orchestra.agents.acp.proctree import AgentProcess
from orchestra.agents.acp.records import (
    AgentExited,
    AgentInitialized,
    AgentSpawned,
    SessionRotated,
)
from orchestra.agents.acp.slot import AgentSlot, spawn_slot
from orchestra.backoff import Backoff
from orchestra.errors import OrchestraError

INIT_TIMEOUT_S = 30.0
RESPAWN_BACKOFF = Backoff.steps(1, 2, 4, 8, 16, 30)
CRASH_LOOP_EXITS = 5
CRASH_LOOP_WINDOW_S = 300.0
log = logging.getLogger("buzz_acp")


class Notifier:
    """Wakes every current waiter on `notify()` (an Event that many tasks may wait on safely)."""

    def __init__(self) -> None:
        self._waiters: set[asyncio.Future[None]] = set()

    def notify(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def waiter(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(future)
        return future


class AgentInitError(OrchestraError):
    """An agent exited or failed `initialize` within 30 s (buzz-acp exits 1, §1.2)."""


class AgentPool:
    def __init__(
        self,
        config: AcpConfig,
        events: EventLog,
        on_session_usage: Callable[[str, dict[str, int]], None],
    ) -> None:
        self._config = config
        self._events = events
        self._on_session_usage = on_session_usage
        self.slots: list[AgentSlot | None] = [None] * config.pool_size
        self.changed = Notifier()
        self.crash_loop = asyncio.Event()
        self._exits: deque[float] = deque()
        self._consecutive_exits = [0] * config.pool_size
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False

    async def start(self, started: list[AgentProcess] | None = None) -> None:
        """Initialize every slot, using the agent processes already `started` (and already
        logged as `agent_spawned`) for the first slots; raises AgentInitError."""
        started = list(started or [])
        for index in range(self._config.pool_size):
            await self._spawn(index, started[index] if index < len(started) else None)

    async def _spawn(self, index: int, process: AgentProcess | None = None) -> None:
        client = BridgeClient(self._events, self._on_session_usage)
        try:
            slot = await spawn_slot(index, self._config, client, process)
        except OSError as error:
            raise AgentInitError(f"cannot start {self._config.agent_command}: {error}") from None
        if process is None:
            self._events.emit(AgentSpawned(slot=index, pid=slot.pid))
        try:
            async with asyncio.timeout(INIT_TIMEOUT_S):
                response = await slot.initialize()
        except TimeoutError:
            await slot.stop()
            raise AgentInitError(f"no initialize response within {INIT_TIMEOUT_S:.0f} s") from None
        except Exception as error:
            # A closed pipe usually means the agent exited: report its exit code if it has one.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await slot.process.wait()
            code = slot.process.returncode
            await slot.stop()
            reason = f"exited with code {code}" if code is not None else str(error) or repr(error)
            raise AgentInitError(reason) from None
        info = response.agent_info
        self._events.emit(
            AgentInitialized(
                slot=index,
                protocol_version=response.protocol_version,
                agent_name=info.name if info else None,
                agent_version=info.version if info else None,
                system_prompt_delivery="meta" if slot.meta_system_prompt else "inline",
            )
        )
        self.slots[index] = slot
        watcher = asyncio.create_task(self._watch(slot), name=f"agent-slot-{index}")
        self._tasks.add(watcher)
        watcher.add_done_callback(self._tasks.discard)
        self.changed.notify()

    async def _watch(self, slot: AgentSlot) -> None:
        code = await slot.process.wait()
        if slot.stopping or self._stopping:
            return
        during_turn = slot.busy or slot.lost_turn
        signal_number = -code if code < 0 else None
        self._events.emit(
            AgentExited(
                slot=slot.index,
                pid=slot.pid,
                exit_code=None if signal_number else code,
                signal=signal_number,
                during_turn=during_turn,
            )
        )
        log.warning("agent in slot %d exited unexpectedly (code %s)", slot.index, code)
        for channel, session in slot.sessions.items():
            self._events.emit(
                SessionRotated(
                    channel_id=channel,
                    slot=slot.index,
                    old_session_id=session.session_id,
                    reason="agent_restarted",
                )
            )
        slot.sessions.clear()
        await slot.conn.close()
        if self.slots[slot.index] is slot:
            self.slots[slot.index] = None
        await self._respawn(slot.index)

    async def _respawn(self, index: int) -> None:
        while not self._stopping:
            now = time.monotonic()
            self._exits.append(now)
            while self._exits and now - self._exits[0] > CRASH_LOOP_WINDOW_S:
                self._exits.popleft()
            if len(self._exits) > CRASH_LOOP_EXITS:
                log.error("agent crash loop; giving up")
                self.crash_loop.set()
                self.changed.notify()
                return
            self._consecutive_exits[index] += 1
            await asyncio.sleep(RESPAWN_BACKOFF.delay(self._consecutive_exits[index]))
            if self._stopping:
                return
            try:
                await self._spawn(index)
                return
            except AgentInitError as error:
                log.warning("agent in slot %d failed to restart: %s", index, error)

    def note_turn_success(self, slot: AgentSlot) -> None:
        self._consecutive_exits[slot.index] = 0

    def _free(self) -> list[AgentSlot]:
        """Idle slots whose agent is alive (a dead one waits for its watcher to replace it)."""
        return [
            slot
            for slot in self.slots
            if slot is not None
            and not slot.busy
            and not slot.lost_turn
            and slot.process.returncode is None
        ]

    def has_free_slot(self) -> bool:
        return bool(self._free())

    def free_unclaimed(self) -> list[AgentSlot]:
        return [slot for slot in self._free() if slot.claimed_by is None]

    def live_slots(self) -> list[AgentSlot]:
        return [s for s in self.slots if s is not None and s.process.returncode is None]

    def acquire(self, channel: str) -> AgentSlot | None:
        """A free slot: the one claimed for this channel, else one holding a session for it,
        else an unclaimed one; a slot claimed for another channel only when nothing else is
        free, since a free slot must never be kept from a ready channel (§1.5)."""

        def rank(slot: AgentSlot) -> int:
            if slot.claimed_by == channel:
                return 0
            if slot.claimed_by is not None:
                return 3
            return 1 if channel in slot.sessions else 2

        chosen = min(self._free(), key=rank, default=None)
        if chosen is not None:
            chosen.busy = True
        return chosen

    def release(self, slot: AgentSlot) -> None:
        slot.busy = False
        self.changed.notify()

    async def wait_for_slot(self, channel: str, shutdown: asyncio.Event) -> AgentSlot | None:
        while not shutdown.is_set() and not self.crash_loop.is_set():
            slot = self.acquire(channel)
            if slot is not None:
                return slot
            changed = self.changed.waiter()
            stopping = asyncio.ensure_future(shutdown.wait())
            crash = asyncio.ensure_future(self.crash_loop.wait())
            wakeups: set[asyncio.Future[Any]] = {changed, stopping, crash}
            await asyncio.wait(wakeups, return_when=asyncio.FIRST_COMPLETED)
            for waiter in wakeups:
                waiter.cancel()
        return None

    async def stop_all(self) -> None:
        """Close every agent's stdin, wait 2 s, TERM the trees, wait 2 s, KILL."""
        self._stopping = True
        for task in list(self._tasks):
            task.cancel()
        slots = [slot for slot in self.slots if slot is not None]
        await asyncio.gather(*(slot.stop() for slot in slots), return_exceptions=True)
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
