"""Which channels are served, and their subscriptions (agent-harness.md §1.2 step 5, §1.3)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from orchestra.agents.acp.config import AcpConfig
from orchestra.agents.acp.eventlog import EventLog
from orchestra.agents.acp.records import (
    Ready,
    RelayDisconnected,
    Subscribed,
    SubscriptionRefused,
    Unsubscribed,
)
from orchestra.agents.acp.relay import (
    RECONNECT_BACKOFF,
    RelayLink,
    channel_filters,
    discovery_filters,
)
from orchestra.buzz import EOSE, BuzzError
from orchestra.nostr import tags
from orchestra.nostr.kinds import Kind

REFUSAL_RETRY_S = 10.0
log = logging.getLogger("buzz_acp")

OnMessage = Callable[[str, dict[str, Any]], None]
OnUnserved = Callable[[str], None]


def lists_member(member_list: dict[str, Any], pubkey: str) -> bool:
    return pubkey in tags.values(tags.of_event(member_list), "p")


class Channels:
    """Discovery of member channels plus one `acp-ch-<uuid>` subscription per served channel."""

    def __init__(
        self,
        config: AcpConfig,
        relay: RelayLink,
        events: EventLog,
        since: int,
        on_message: OnMessage,
        on_unserved: OnUnserved,
    ) -> None:
        self._config = config
        self._relay = relay
        self._events = events
        self._since = since
        self._on_message = on_message
        self._on_unserved = on_unserved
        self._self = config.keys.pubkey
        self.names: dict[str, str] = {}
        self.served: set[str] = set()
        self._subscribed: set[str] = set()  # got EOSE at least once (readiness)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._retry: dict[str, asyncio.Event] = {}
        self._discovered = asyncio.Event()
        self._ready_logged = False
        self._disconnects = 0
        # Set when a channel task dies of something other than a relay refusal (a bug):
        # the bridge then exits 4 instead of silently no longer serving that channel.
        self.crashed: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

    def wanted(self, channel: str) -> bool:
        return not self._config.channels or channel in self._config.channels

    def is_served(self, channel: str) -> bool:
        return channel in self.served

    def name(self, channel: str) -> str:
        return self.names.get(channel, channel)

    async def run_discovery(self) -> None:
        subscription = self._relay.subscribe(
            "acp-discovery", discovery_filters(self._self), self._on_disconnect
        )
        async with subscription:
            async for item in subscription:
                self._disconnects = 0
                if item is EOSE:
                    self._discovered.set()
                    self._check_ready()
                    continue
                channel = tags.first_value(tags.of_event(item), "d")
                if channel is None or not self.wanted(channel):
                    continue
                if lists_member(item, self._self):
                    self._start_channel(channel)

    def _start_channel(self, channel: str) -> None:
        if channel in self._retry:
            self._retry[channel].set()  # a refused subscription is retried on a new member list
        if channel in self._tasks and not self._tasks[channel].done():
            return
        self._retry[channel] = asyncio.Event()
        task = asyncio.create_task(self._serve(channel), name=f"acp-ch-{channel}")
        task.add_done_callback(self._note_crash)
        self._tasks[channel] = task

    def _note_crash(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None and not self.crashed.done():
            self.crashed.set_result(error)

    async def _serve(self, channel: str) -> None:
        since = self._since
        while True:
            try:
                if await self._subscription(channel, since):
                    return  # removed from the channel
            except BuzzError as error:
                self._unserve(channel, None)
                message = error.message
                log.warning("subscription to channel %s refused: %s", channel, message)
                self._events.emit(SubscriptionRefused(channel_id=channel, message=message))
                retry = self._retry[channel]
                retry.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(REFUSAL_RETRY_S):
                        await retry.wait()

    async def _subscription(self, channel: str, since: int) -> bool:
        """Serve one subscription; True when the agent was removed from the channel."""
        filters = channel_filters(self._config, channel, since)
        # Only discovery reports drops: one connection, so one `relay_disconnected` per drop.
        async with self._relay.subscribe(f"acp-ch-{channel}", filters, None) as sub:
            # Served from the REQ on: stored events (replay window, or posted in our start
            # second) arrive before EOSE and must pass the wake rule's channel check.
            self.served.add(channel)
            async for item in sub:
                if item is EOSE:
                    self._subscribed.add(channel)
                    log.info("subscribed to channel %s", channel)
                    self._events.emit(
                        Subscribed(channel_id=channel, channel_name=self.name(channel))
                    )
                    self._check_ready()
                elif item.get("kind") == Kind.CHANNEL_METADATA:
                    name = tags.first_value(tags.of_event(item), "name")
                    if name:
                        self.names[channel] = name
                elif item.get("kind") == Kind.CHANNEL_MEMBERS:
                    if not lists_member(item, self._self):
                        self._unserve(channel, "removed")
                        return True
                elif item.get("kind") == Kind.MESSAGE:
                    self._on_message(channel, item)
        return False

    def _unserve(self, channel: str, reason: str | None) -> None:
        was_served = channel in self.served
        self.served.discard(channel)
        self._subscribed.discard(channel)
        if reason is not None and was_served:
            log.info("no longer serving channel %s: %s", channel, reason)
            self._events.emit(Unsubscribed(channel_id=channel, reason=reason))
        self._on_unserved(channel)

    def _check_ready(self) -> None:
        if self._ready_logged or not self._discovered.is_set():
            return
        expected = set(self._config.channels) or set(self._tasks)
        if expected <= self._subscribed:
            self._ready_logged = True
            channels = sorted(self._subscribed)
            log.info("ready: serving %d channel(s)", len(channels))
            self._events.emit(Ready(channels=channels))

    def _on_disconnect(self, reason: str) -> None:
        self._disconnects += 1
        delay = RECONNECT_BACKOFF.delay(self._disconnects)
        logging.getLogger("relay").warning("relay disconnected: %s", reason)
        self._events.emit(RelayDisconnected(reason=reason, reconnect_in_s=delay))

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
