"""The client object's connection handling and low-level primitives (buzz-cli.md §2, §12)."""

import asyncio
import itertools
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self

from orchestra.backoff import Backoff
from orchestra.buzz.connection import Lost, RelayConnection
from orchestra.buzz.errors import EOSE, BuzzError, from_relay_message, network_error
from orchestra.buzz.paging import EventDict, read_pages
from orchestra.buzz.relay_info import fetch_max_limit
from orchestra.buzz.subscription import RECONNECT_BACKOFF, Subscription
from orchestra.nostr.event import sign_event
from orchestra.nostr.keys import Keys
from orchestra.nostr.wire import RelayClosed

DEFAULT_TIMEOUT = 30.0
_URL_SCHEMES = {"ws": "ws", "wss": "wss", "http": "ws", "https": "wss"}


def normalize_client_url(url: str) -> str:
    """`http`→`ws`, `https`→`wss`, an empty path becomes `/` (buzz-cli.md §1)."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.lower() not in _URL_SCHEMES or not rest or rest.startswith("/"):
        raise BuzzError(
            "user_error",
            f"invalid relay URL {url!r}: expected ws://, wss://, http:// or https:// and a host",
        )
    host, slash, path = rest.partition("/")
    return f"{_URL_SCHEMES[scheme.lower()]}://{host}/{path if slash else ''}"


def parse_secret_key(secret_key: str, source: str = "BUZZ_PRIVATE_KEY") -> Keys:
    """The keys of a hex or nsec secret; an error names `source` (the key never appears)."""
    try:
        return Keys.parse(secret_key)
    except ValueError:
        raise BuzzError("key_error", f"{source} is not a valid hex or nsec secret key") from None


class ClientCore:
    """One identity, one relay, one lazily opened authenticated connection."""

    EOSE = EOSE

    def __init__(
        self, relay_url: str, secret_key: str, *, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self._init(relay_url, parse_secret_key(secret_key), timeout)

    @classmethod
    def from_keys(cls, relay_url: str, keys: Keys, *, timeout: float = DEFAULT_TIMEOUT) -> Self:
        client = cls.__new__(cls)
        client._init(relay_url, keys, timeout)
        return client

    def _init(self, relay_url: str, keys: Keys, timeout: float) -> None:
        self.relay_url = normalize_client_url(relay_url)
        self.timeout = timeout
        self.warnings: list[dict[str, str]] = []
        self._keys = keys
        self._connection: RelayConnection | None = None
        self._connect_lock = asyncio.Lock()
        self._sub_counter = itertools.count(1)
        self._max_limit: int | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(relay_url={self.relay_url!r}, pubkey={self.pubkey!r})"

    @property
    def pubkey(self) -> str:
        return self._keys.pubkey

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """True after `close()` until an operation opens a new connection."""
        return self._closed

    async def close(self) -> None:
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def connection(self) -> RelayConnection:
        """The open, authenticated connection; (re)opened when missing or dropped."""
        async with self._connect_lock:
            if self._connection is None or not self._connection.is_open:
                if self._connection is not None:
                    await self._connection.close()
                    self._connection = None
                self._connection = await RelayConnection.open(
                    self.relay_url, self._keys, self.timeout
                )
                self._closed = False
            return self._connection

    def next_sub_id(self) -> str:
        return f"cli-{next(self._sub_counter)}"

    def warn(self, code: str, message: str) -> None:
        self.warnings.append({"warning": code, "message": message})

    async def query(
        self, filters: Sequence[dict[str, Any]], sub_id: str | None = None
    ) -> list[EventDict]:
        """One REQ; the stored events before EOSE in relay order, then CLOSE."""
        connection = await self.connection()
        sub_id = sub_id or self.next_sub_id()
        queue = connection.open_subscription(sub_id)
        events: list[EventDict] = []
        try:
            await connection.request(sub_id, list(filters))
            async with asyncio.timeout(self.timeout):
                while True:
                    item = await queue.get()
                    if item is EOSE:
                        return events
                    if isinstance(item, RelayClosed):
                        raise from_relay_message(item.message)
                    if isinstance(item, Lost):
                        raise network_error(f"connection to relay lost: {item.reason}")
                    events.append(item)
        except TimeoutError:
            raise network_error("timed out waiting for the relay's EOSE") from None
        finally:
            await connection.close_subscription(sub_id, queue)

    async def query_one(self, query_filter: dict[str, Any]) -> list[EventDict]:
        return await self.query([query_filter])

    async def publish(
        self,
        kind: int,
        content: str,
        tags: Sequence[Sequence[str]],
        created_at: int | None = None,
    ) -> dict[str, Any]:
        """Sign and publish; `OK false` raises the mapped `BuzzError`."""
        event = sign_event(self._keys, kind, content, tags, created_at=created_at)
        connection = await self.connection()
        accepted, message = await connection.send_event(event, self.timeout)
        if not accepted:
            raise from_relay_message(message)
        return {
            "event_id": event.id,
            "accepted": True,
            "message": message,
            "event": event.to_dict(),
        }

    def subscribe(
        self,
        filters: Sequence[dict[str, Any]],
        sub_id: str | None = None,
        *,
        reconnect: bool = False,
        backoff: Backoff | Sequence[float] = RECONNECT_BACKOFF,
        on_disconnect: Callable[[str], Any] | None = None,
    ) -> Subscription:
        return Subscription(
            self,
            list(filters),
            sub_id or self.next_sub_id(),
            reconnect=reconnect,
            backoff=backoff if isinstance(backoff, Backoff) else Backoff.steps(*backoff or (1.0,)),
            on_disconnect=on_disconnect,
        )

    async def max_limit(self) -> int:
        if self._max_limit is None:
            self._max_limit = await fetch_max_limit(self.relay_url, self.timeout)
        return self._max_limit

    async def paged_query(
        self, base_filter: dict[str, Any], wanted: int | None = None, *, before: int | None = None
    ) -> tuple[list[EventDict], bool]:
        """buzz-cli.md §5.2 paging: `(events oldest first, older_ones_exist)`."""
        # The NIP-11 read and the WebSocket handshake are independent: overlap them.
        max_limit, _ = await asyncio.gather(self.max_limit(), self.connection())
        return await read_pages(
            self.query_one, base_filter, max_limit=max_limit, wanted=wanted, before=before
        )
