"""buzz-acp's main loop (agent-harness.md §1.2, §1.5, §1.9, §1.10): wake, queue, schedule,
run turns with retries and failure notices, shut down cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from typing import Any

from orchestra.agents.acp.channels import Channels
from orchestra.agents.acp.config import AcpConfig
from orchestra.agents.acp.eventlog import EventLog, PromptLog
from orchestra.agents.acp.pool import AgentInitError, AgentPool
from orchestra.agents.acp.proctree import AgentProcess, end_orphans
from orchestra.agents.acp.prompt import (
    TurnInput,
    compose_turn_prompt,
    reply_anchor,
    sort_key,
    thread_roots,
)
from orchestra.agents.acp.queues import ChannelQueues
from orchestra.agents.acp.records import (
    EventDropped,
    EventIgnored,
    EventQueued,
    FailureNotice,
    RelayAuthenticated,
    RelayConnected,
    Shutdown,
)
from orchestra.agents.acp.relay import RelayLink, RelayUnavailable
from orchestra.agents.acp.sessions import SessionManager
from orchestra.agents.acp.slot import AgentSlot
from orchestra.agents.acp.turns import Limits, TurnOutcome, TurnRequest, TurnRunner
from orchestra.agents.acp.wake import WakeRule
from orchestra.backoff import Backoff
from orchestra.buzz import BuzzError
from orchestra.nostr import tags

#: §1.9: a failed turn is retried after 5 s × 3^(k−1).
TURN_RETRY = Backoff(first=5.0, factor=3.0)
NOTICE_REASONS = {"idle_timeout": "idle timeout", "max_turn_duration": "maximum turn duration"}
log = logging.getLogger("buzz_acp")


class Bridge:
    def __init__(self, config: AcpConfig, events: EventLog, prompts: PromptLog) -> None:
        self.config = config
        self.events = events
        self.prompts = prompts
        self.start_time = int(time.time())
        self.shutdown = asyncio.Event()
        self.relay = RelayLink(config)
        self.runner = TurnRunner(
            events, prompts, Limits(config.idle_timeout_s, config.max_turn_duration_s)
        )
        self.pool = AgentPool(config, events, self.runner.record_session_usage)
        self.queues = ChannelQueues(
            max_queue=config.max_queue, max_batch=config.max_batch, window_s=config.batch_window_s
        )
        self.sessions = SessionManager(config, events, prompts, self.relay, self.pool, self.queues)
        # Turns whose retry waits for its delay or a slot: demand that pre-creation respects.
        self.retry_waiters = 0
        self.wake = WakeRule(
            config, self.start_time, lambda channel: self.channels.is_served(channel)
        )
        self.channels = Channels(
            config, self.relay, events, self.wake.since, self.on_message, self.on_unserved
        )
        self._turn_tasks: set[asyncio.Task[None]] = set()
        # A turn task that dies of an unexpected exception (a bug) ends the process with exit 4.
        self.crashed: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

    # --- events from the relay -------------------------------------------------------------

    def on_message(self, channel: str, event: dict[str, Any]) -> None:
        reason = self.wake.check(event)
        if reason is not None:
            self.events.emit(
                EventIgnored(
                    channel_id=channel,
                    event_id=event.get("id"),
                    author=event.get("pubkey"),
                    reason=reason,
                )
            )
            return
        dropped = self.queues.add(channel, event, time.monotonic())
        self.events.emit(
            EventQueued(
                channel_id=channel,
                event_id=event["id"],
                author=event["pubkey"],
                created_at=event["created_at"],
                queue_depth=self.queues.depth(channel),
            )
        )
        if dropped is not None:
            log.warning("queue full for channel %s: dropped event %s", channel, dropped["id"])
            self.events.emit(
                EventDropped(channel_id=channel, event_id=dropped["id"], reason="queue_full")
            )
        self.pool.changed.notify()

    def on_unserved(self, channel: str) -> None:
        self.sessions.abandon(channel)
        for event in self.queues.drop_channel(channel):
            self.events.emit(
                EventIgnored(
                    channel_id=channel,
                    event_id=event["id"],
                    author=event["pubkey"],
                    reason="unsubscribed_channel",
                )
            )

    # --- scheduling ------------------------------------------------------------------------

    async def schedule(self) -> None:
        while not self.shutdown.is_set() and not self.pool.crash_loop.is_set():
            while self.pool.has_free_slot():
                channel = self.queues.next_ready(time.monotonic())
                if channel is None:
                    break
                slot = self.pool.acquire(channel)
                assert slot is not None
                self.sessions.taken(channel, slot)
                batch = self.queues.take_batch(channel)
                self.queues.in_flight.add(channel)
                task = asyncio.create_task(self.serve_batch(channel, batch, slot))
                self._turn_tasks.add(task)
                task.add_done_callback(self._turn_done)
            # Channels still inside their batch window get their session started meanwhile.
            self.sessions.precreate(self.retry_waiters)
            deadline = self.queues.next_deadline()
            timeout = None if deadline is None else max(deadline - time.monotonic(), 0.001)
            changed = self.pool.changed.waiter()
            stopping = asyncio.ensure_future(self.shutdown.wait())
            crash = asyncio.ensure_future(self.pool.crash_loop.wait())
            wakeups: set[asyncio.Future[Any]] = {changed, stopping, crash}
            await asyncio.wait(wakeups, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for waiter in wakeups:
                waiter.cancel()

    def _turn_done(self, task: asyncio.Task[None]) -> None:
        self._turn_tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None and not self.crashed.done():
            self.crashed.set_result(error)

    async def serve_batch(self, channel: str, batch: list[dict[str, Any]], slot: AgentSlot) -> None:
        """Run the batch as one turn, retrying retryable failures on the same events."""
        batch = sorted(batch, key=sort_key)
        event_ids = [str(event["id"]) for event in batch]
        max_attempts = self.config.max_retries + 1
        current: AgentSlot | None = slot
        try:
            for attempt in range(1, max_attempts + 1):
                if current is None:
                    return
                outcome, request = await self.run_turn(current, channel, batch, event_ids, attempt)
                self.pool.release(current)
                current = None
                if outcome.completed:
                    if outcome.cancel_reason in NOTICE_REASONS:
                        await self.post_notice(
                            channel, batch, NOTICE_REASONS[outcome.cancel_reason]
                        )
                    return
                will_retry = (
                    outcome.retryable and attempt < max_attempts and not self.shutdown.is_set()
                )
                delay = TURN_RETRY.delay(attempt) if will_retry else None
                self.runner.finish_failed(request, outcome, delay)
                if delay is None:
                    if not self.shutdown.is_set():
                        await self.post_notice(channel, batch, short_reason(outcome))
                    return
                self.retry_waiters += 1
                try:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(delay):
                            await self.shutdown.wait()
                    current = await self.pool.wait_for_slot(channel, self.shutdown)
                finally:
                    self.retry_waiters -= 1
                if current is not None:
                    self.sessions.taken(channel, current)
        finally:
            if current is not None:
                self.pool.release(current)
            self.queues.in_flight.discard(channel)
            self.pool.changed.notify()

    async def run_turn(
        self,
        slot: AgentSlot,
        channel: str,
        batch: list[dict[str, Any]],
        event_ids: list[str],
        attempt: int,
    ) -> tuple[TurnOutcome, TurnRequest]:
        max_attempts = self.config.max_retries + 1
        try:
            session, is_new, system_prompt = await self.sessions.session_for(slot, channel)
            text = await self.compose_prompt(channel, batch)
        except Exception as error:
            # session/new (JSON-RPC error, dead agent) or a relay query failed: this attempt
            # fails like a turn would, so the JSONL invariants and retries stay uniform.
            request = TurnRequest(channel, event_ids, "", attempt, max_attempts, "", False)
            return self.runner.fail_before_prompt(slot, request, error), request
        if is_new and not slot.meta_system_prompt and system_prompt:
            text = f"{system_prompt}\n\n{text}"
        request = TurnRequest(
            channel, event_ids, text, attempt, max_attempts, session.session_id, is_new
        )
        session.turns += 1
        outcome = await self.runner.run(slot, request, self.shutdown)
        if outcome.completed:
            self.pool.note_turn_success(slot)
        return outcome, request

    async def compose_prompt(self, channel: str, batch: list[dict[str, Any]]) -> str:
        threads = []
        if self.config.context_message_limit > 0:
            own_ids = {str(event["id"]) for event in batch}
            for root in thread_roots(batch):
                threads.append(
                    await self.relay.thread_context(
                        channel, root, own_ids, self.config.context_message_limit
                    )
                )
        pubkeys = {str(event["pubkey"]) for event in batch}
        for event in batch:
            pubkeys.update(tags.mentions(tags.of_event(event)))
        for thread in threads:
            pubkeys.update(str(message["pubkey"]) for message in thread.messages)
        names = await self.relay.display_names(pubkeys)
        return compose_turn_prompt(
            TurnInput(
                channel_id=channel,
                channel_name=self.channels.name(channel),
                events=batch,
                self_pubkey=self.config.keys.pubkey,
                names=names,
                threads=threads,
            )
        )

    async def post_notice(self, channel: str, batch: list[dict[str, Any]], reason: str) -> None:
        if not self.config.failure_notices:
            return
        anchor = reply_anchor(batch[0])
        try:
            event_id = await self.relay.post_failure_notice(channel, anchor, reason)
        except BuzzError as error:
            log.warning("failure notice for channel %s not posted: %s", channel, error.message)
            return
        logging.getLogger("pool::prompt").info(
            "failure notice posted for channel %s: %s", channel, event_id
        )
        self.events.emit(
            FailureNotice(channel_id=channel, event_id=event_id, reply_to=anchor, reason=reason)
        )

    # --- life cycle --------------------------------------------------------------------------

    async def run(self, started: list[AgentProcess] | None = None) -> int:
        """Serve until a signal; `started` are agent processes the entry point already spawned."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.shutdown.set)
        try:
            return await self._run(started)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    async def _stop_agents(self) -> None:
        """Stop every agent's tree, then whatever outlived it: the buzz-acp process is a child
        subreaper (cli.main), so orphaned grandchildren are still our descendants."""
        await self.pool.stop_all()
        await end_orphans()

    async def _run(self, started: list[AgentProcess] | None) -> int:
        try:
            await self.pool.start(started)
        except AgentInitError as error:
            log.error("agent failed to initialize: %s", error)
            await self._stop_agents()
            return self.exit("agent_init_failed", error.exit_code)
        early_exit = await self._connect_relay()
        if early_exit is not None:
            await self._stop_agents()
            return early_exit
        failure = await self._serve_until_stopped()
        await self.channels.close()
        await self._stop_agents()
        with contextlib.suppress(Exception):
            await self.relay.close()
        if self.pool.crash_loop.is_set():
            return self.exit("agent_crash_loop", 3)
        if failure is not None:
            log.error("internal error: %r", failure)
            return self.exit("internal_error", 4)
        return self.exit("signal", 0)

    async def _connect_relay(self) -> int | None:
        """Connect and authenticate; an exit code when startup ends here instead."""
        connect = asyncio.create_task(self.relay.connect())
        stopping = asyncio.ensure_future(self.shutdown.wait())
        await asyncio.wait({connect, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not connect.done():  # a signal while still connecting
            connect.cancel()
            await asyncio.gather(connect, return_exceptions=True)
            return self.exit("signal", 0)
        if isinstance(error := connect.exception(), RelayUnavailable):
            log.error("relay not reachable within %ss: %s", self.config.connect_timeout_s, error)
            return self.exit("relay_unreachable", error.exit_code)
        connect.result()
        self.events.emit(RelayConnected(url=self.config.relay_url))
        self.events.emit(RelayAuthenticated())
        return None

    async def _serve_until_stopped(self) -> BaseException | None:
        """Run discovery and scheduling until a signal, a crash loop or an internal failure;
        let in-flight turns end (they see the shutdown and cancel). Returns the failure."""
        discovery = asyncio.create_task(self.channels.run_discovery(), name="acp-discovery")
        scheduler = asyncio.create_task(self.schedule(), name="acp-scheduler")
        stopping = asyncio.ensure_future(self.shutdown.wait())
        crash = asyncio.ensure_future(self.pool.crash_loop.wait())
        crashes = (self.channels.crashed, self.crashed)
        watched: set[asyncio.Future[Any]] = {discovery, scheduler, stopping, crash, *crashes}
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        self.shutdown.set()
        failures = [t.exception() for t in (discovery, scheduler) if t.done() and not t.cancelled()]
        failures += [c.result() for c in crashes if c.done()]
        if turn_tasks := list(self._turn_tasks):
            await asyncio.gather(*turn_tasks, return_exceptions=True)
        await self.sessions.close()
        for task in (discovery, scheduler, crash):
            task.cancel()
        await asyncio.gather(discovery, scheduler, crash, return_exceptions=True)
        return next((failure for failure in failures if failure is not None), None)

    def exit(self, reason: str, code: int) -> int:
        log.info("shutting down (%s), exit code %d", reason, code)
        self.events.emit(Shutdown(reason=reason, exit_code=code))
        return code


def short_reason(outcome: TurnOutcome) -> str:
    error = outcome.error or "unknown error"
    return error if len(error) <= 120 else error[:117] + "..."
