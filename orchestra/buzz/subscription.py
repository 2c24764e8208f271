"""Live subscriptions: stored events, `EOSE`, then live events (buzz-cli.md §12).

With `reconnect=True` a dropped connection is reopened with backoff, re-authenticated and the
REQ re-sent with `since` = the newest `created_at` already delivered; events already delivered
are dropped by id, so the caller sees every event exactly once across drops.
"""

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from orchestra.backoff import Backoff
from orchestra.buzz.connection import Lost, RelayConnection, SubscriptionItem
from orchestra.buzz.errors import EOSE, BuzzError, from_relay_message, network_error
from orchestra.nostr.wire import RelayClosed

if TYPE_CHECKING:
    from orchestra.buzz.core import ClientCore

SEEN_IDS_KEPT = 10_000
#: `client.subscribe`'s default: 1, 2, 4, 8, 15, 30 s, then 30 s.
RECONNECT_BACKOFF = Backoff.steps(1, 2, 4, 8, 15, 30)


class Subscription:
    """`async with client.subscribe(filters) as sub: async for item in sub: ...`"""

    def __init__(
        self,
        client: "ClientCore",
        filters: list[dict[str, Any]],
        sub_id: str,
        *,
        reconnect: bool,
        backoff: Backoff,
        on_disconnect: Callable[[str], Any] | None,
    ) -> None:
        self.sub_id = sub_id
        self.filters = filters
        self.reconnects = 0
        self._client = client
        self._reconnect = reconnect
        self._backoff = backoff
        self._on_disconnect = on_disconnect
        self._connection: RelayConnection | None = None
        self._queue: asyncio.Queue[SubscriptionItem] | None = None
        self._closed = False
        self._eose_delivered = False
        self._newest_created_at: int | None = None
        self._seen_order: deque[str] = deque()
        self._seen: set[str] = set()

    async def __aenter__(self) -> "Subscription":
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncIterator[Any]:
        # A generator, so that leaving an `async for` early (break, exception) sends CLOSE even
        # without `async with`: the event loop finalises the abandoned generator right away.
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        try:
            while True:
                try:
                    item = await self.__anext__()
                except StopAsyncIteration:
                    return
                yield item
        finally:
            await self.aclose()

    async def start(self) -> None:
        """Send the REQ (done implicitly by `async with` or the first iteration)."""
        if self._queue is None:
            await self._request(self.filters)

    async def aclose(self) -> None:
        """Stop: sends `CLOSE` when the connection is still open."""
        if self._closed:
            return
        self._closed = True
        if self._connection is not None and self._queue is not None:
            await self._connection.close_subscription(self.sub_id, self._queue)

    async def __anext__(self) -> dict[str, Any] | Any:
        if self._closed:
            raise StopAsyncIteration
        await self.start()
        while True:
            assert self._queue is not None
            item = await self._queue.get()
            if item is EOSE:
                if self._eose_delivered:
                    continue  # a re-subscription's EOSE: the caller is already live
                self._eose_delivered = True
                return EOSE
            if isinstance(item, RelayClosed):
                self._closed = True
                raise from_relay_message(item.message)
            if isinstance(item, Lost):
                await self._recover(item.reason)
                continue
            if self._remember(item):
                return item

    async def _request(self, filters: list[dict[str, Any]]) -> None:
        connection = await self._client.connection()
        self._connection = connection
        self._queue = connection.open_subscription(self.sub_id)
        await connection.request(self.sub_id, filters)

    def _remember(self, event: dict[str, Any]) -> bool:
        """False for an event already delivered."""
        event_id = event.get("id")
        if not isinstance(event_id, str) or event_id in self._seen:
            return False
        self._seen.add(event_id)
        self._seen_order.append(event_id)
        if len(self._seen_order) > SEEN_IDS_KEPT:
            self._seen.discard(self._seen_order.popleft())
        created_at = event.get("created_at")
        if isinstance(created_at, int) and (
            self._newest_created_at is None or created_at > self._newest_created_at
        ):
            self._newest_created_at = created_at
        return True

    def resume_filters(self) -> list[dict[str, Any]]:
        """The filters re-sent after a drop: nothing older than what was already delivered."""
        if self._newest_created_at is None:
            return self.filters
        resumed = []
        for original in self.filters:
            query = {key: value for key, value in original.items() if key != "limit"}
            query["since"] = max(original.get("since", 0), self._newest_created_at)
            resumed.append(query)
        return resumed

    async def _recover(self, reason: str) -> None:
        self._give_up_unless_reconnecting(reason)
        await self._notify_disconnect(reason)
        retry = 0
        while True:
            retry += 1
            await asyncio.sleep(self._backoff.delay(retry))
            self._give_up_unless_reconnecting(reason)
            try:
                await self._request(self.resume_filters())
            except BuzzError as exc:
                if not exc.retryable:
                    self._closed = True
                    raise
                await self._notify_disconnect(exc.message)
                continue
            self.reconnects += 1
            return

    def _give_up_unless_reconnecting(self, reason: str) -> None:
        # A closed client must not be reopened behind its owner's back by a lingering iterator.
        if not self._reconnect or self._client.closed:
            self._closed = True
            raise network_error(f"connection to relay lost: {reason}")

    async def _notify_disconnect(self, reason: str) -> None:
        if self._on_disconnect is None:
            return
        result = self._on_disconnect(reason)
        if inspect.isawaitable(result):
            await result
