"""ACP sessions of the pool's slots, and their creation ahead of the turn (agent-harness.md §1.5).

A session is created for a channel's first turn on a slot. `session/new` is slow (buzz-agent
starts the MCP server and lists its tools), so it is begun as soon as the channel has queued
events and is waiting for its batch window, on the slot that the turn will then take: the slot
is *claimed* for the channel, and `AgentPool.acquire` gives a claimed slot to its channel first
and to any other channel only when no unclaimed slot is free.

A claim is made only when it cannot be needed by someone else before the channel is ready: the
free unclaimed slots must outnumber every other channel waiting without a claim plus every
retry waiting for a slot. The turn then certainly comes to the claimed slot (channels queued
later become ready later). Should a slot be taken anyway (an agent died and its channel's retry
took the claimed slot), the claim is abandoned: the session it makes is registered on its slot
as the channel's warm session there, exactly as if a turn had created it, and later turns of that
channel on that slot reuse it. A failed creation fails the turn that takes the claim, with the
records and retries of any failed session creation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from orchestra.agents.acp.config import AcpConfig
from orchestra.agents.acp.eventlog import EventLog, PromptLog
from orchestra.agents.acp.pool import AgentPool
from orchestra.agents.acp.prompt import compose_system_prompt
from orchestra.agents.acp.queues import ChannelQueues
from orchestra.agents.acp.records import SessionRotated
from orchestra.agents.acp.relay import RelayLink
from orchestra.agents.acp.slot import AgentSlot, Session

log = logging.getLogger("buzz_acp")


@dataclass
class Claim:
    slot: AgentSlot
    task: asyncio.Task[tuple[Session, str]]


class SessionManager:
    def __init__(
        self,
        config: AcpConfig,
        events: EventLog,
        prompts: PromptLog,
        relay: RelayLink,
        pool: AgentPool,
        queues: ChannelQueues,
    ) -> None:
        self._config = config
        self._events = events
        self._prompts = prompts
        self._relay = relay
        self._pool = pool
        self._queues = queues
        self._claims: dict[str, Claim] = {}
        self._abandoned: set[asyncio.Task[tuple[Session, str]]] = set()
        self._closed = False

    # --- the turn's session -----------------------------------------------------------------

    async def session_for(self, slot: AgentSlot, channel: str) -> tuple[Session, bool, str]:
        """(session, is new, system prompt when new); raises when it cannot be created."""
        claim = self._claims.get(channel)
        if claim is not None and claim.slot is slot:
            self._unclaim(channel)
            session, system_prompt = await claim.task
        else:
            current = slot.sessions.get(channel)
            if current is not None and not self._exhausted(current):
                return current, False, ""
            session, system_prompt = await self._create(slot, channel)
        slot.sessions[channel] = session
        return session, True, system_prompt

    def _exhausted(self, session: Session) -> bool:
        limit = self._config.max_turns_per_session
        return bool(limit) and session.turns >= limit

    async def _create(self, slot: AgentSlot, channel: str) -> tuple[Session, str]:
        old = slot.sessions.get(channel)
        if old is not None and self._exhausted(old):
            self._events.emit(
                SessionRotated(
                    channel_id=channel,
                    slot=slot.index,
                    old_session_id=old.session_id,
                    reason="max_turns_per_session",
                )
            )
        memory = await self._relay.core_memory() if self._config.memory else None
        system_prompt = compose_system_prompt(
            self._config.base_prompt, self._config.persona, memory
        )
        # The idle timeout bounds session/new too: a hung MCP start must not block the channel.
        async with asyncio.timeout(self._config.idle_timeout_s):
            session_id = await slot.new_session(self._config, system_prompt)
        self._prompts.write("system", system_prompt, channel_id=channel, session_id=session_id)
        return Session(session_id), system_prompt

    # --- creation ahead of the turn ---------------------------------------------------------

    def precreate(self, retry_waiters: int) -> None:
        """Claim a slot and start `session/new` for each channel waiting out its batch window
        whose turn will need a new session, oldest channel first, while that is safe."""
        if self._closed:
            return
        older_demand = retry_waiters
        for channel in self._queues.waiting():
            if channel in self._claims:
                continue
            free = self._pool.free_unclaimed()
            # Older unclaimed channels become ready first and may take any free slot (a
            # younger one becomes ready after this channel has taken its claimed slot).
            if len(free) <= older_demand:
                return
            slot = self._target(channel, free)
            if slot is None:
                older_demand += 1
                continue
            slot.claimed_by = channel
            task = asyncio.create_task(self._create(slot, channel), name=f"session-{channel}")
            self._claims[channel] = Claim(slot, task)
            log.debug(
                "creating a session for channel %s on slot %d ahead of its turn",
                channel,
                slot.index,
            )

    def _target(self, channel: str, free: list[AgentSlot]) -> AgentSlot | None:
        """The slot the channel's turn will take if a new session is needed there, else None."""
        holding = [s for s in self._pool.live_slots() if channel in s.sessions]
        if any(slot not in free for slot in holding):
            return None  # a session on a busy slot may be free again in time: do not guess
        if holding:
            slot = holding[0]
            return slot if self._exhausted(slot.sessions[channel]) else None
        return free[0] if free else None

    def taken(self, channel: str, slot: AgentSlot) -> None:
        """The channel's turn took `slot`: a claim on another slot will not be used by it."""
        claim = self._claims.get(channel)
        if claim is not None and claim.slot is not slot:
            self.abandon(channel)

    def abandon(self, channel: str) -> None:
        """Drop the channel's claim; its session, once made, becomes the slot's warm session."""
        claim = self._claims.get(channel)
        if claim is None:
            return
        self._unclaim(channel)
        self._abandoned.add(claim.task)

        def register(task: asyncio.Task[tuple[Session, str]]) -> None:
            self._abandoned.discard(task)
            if task.cancelled() or task.exception() is not None:
                return  # nothing was made; a turn creating it would have failed the same way
            claim.slot.sessions[channel] = task.result()[0]

        claim.task.add_done_callback(register)

    def _unclaim(self, channel: str) -> None:
        claim = self._claims.pop(channel)
        if claim.slot.claimed_by == channel:
            claim.slot.claimed_by = None

    async def close(self) -> None:
        """At shutdown: no more claims; stop the creations nobody will use."""
        self._closed = True
        for channel in list(self._claims):
            self.abandon(channel)
        tasks = list(self._abandoned)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
