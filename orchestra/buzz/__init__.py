"""Buzz client library (`orchestra.buzz`) and the `buzz` CLI built on it (buzz-cli.md §12).

Public API (import from `orchestra.buzz`; names load lazily so `buzz --help` stays fast):

* `BuzzClient(relay_url, secret_key, *, timeout=30.0)` — one identity (hex or nsec secret), one
  relay, one NIP-42-authenticated WebSocket opened on first use, reopened after a drop, closed
  with `await client.close()` or `async with BuzzClient(...) as client:`.
  `BuzzClient.from_keys(relay_url, keys, *, timeout=30.0)` builds one from `orchestra.nostr.keys.Keys`.
  Attributes: `pubkey` (hex), `warnings` (list of `{"warning", "message"}` dicts), `EOSE`.
* Operations — one coroutine method per CLI command, flags as keyword arguments, returning what
  the command prints:
  `messages_send(channel, content, mention=None, reply_to=None, kind=9)`,
  `messages_get(channel, limit=50, before=None, since=None, kinds=None, all=False)`,
  `messages_thread(channel, event, limit=500)`,
  `channels_create(name, type="stream", visibility="open", description=None, ttl=None)`,
  `channels_get(channel)`, `channels_search(query, exact=False, include_archived=False, limit=1000)`,
  `channels_members(channel)`, `channels_add_member(channel, pubkey, role="member")`,
  `channels_remove_member(channel, pubkey)`,
  `channels_update(channel, name=None, description=None, visibility=None, ttl=None, no_ttl=False)`,
  `channels_archive(channel)`, `channels_unarchive(channel)`, `channels_join(channel)`,
  `channels_leave(channel)`, `users_get(pubkey=None, name=None, exact=False, limit=50)`,
  `users_set_profile(name=None, display_name=None, about=None, picture=None, bot=None)`,
  `mem_ls()`, `mem_get(slug)`, `mem_hash(slug)`,
  `mem_set(slug, value, allow_empty=False, base_hash=None)`, `mem_rm(slug)`.
* Primitives: `await client.query(filters, sub_id=None) -> list[dict]`;
  `await client.publish(kind, content, tags, created_at=None) -> {"event_id", "accepted",
  "message", "event"}`; `await client.paged_query(base_filter, wanted=None)`
  (buzz-cli.md §5.2 paging, returns `(events oldest first, more_exist)`);
  `client.subscribe(filters, sub_id=None, *, reconnect=False, backoff=(1, 2, 4, 8, 15, 30),
  on_disconnect=None)` (`backoff`: delays in seconds, the last repeating, or an
  `orchestra.backoff.Backoff`) — use as `async with client.subscribe(filters) as sub:
  async for item in sub:` — yields event dicts, then `EOSE` once, then live events.
  Without `reconnect` a dropped connection raises a retryable `BuzzError` (`network_error`);
  with `reconnect=True` it reconnects with the backoff, re-authenticates and re-subscribes each
  filter with `since` = the newest `created_at` it already delivered for that filter, and drops
  events already delivered (de-duplicated by id), so no event is lost or repeated.
  `on_disconnect(reason: str)` is called on each drop (sync or async callable).
  `Subscription`: `start()` (sends the REQ early), `aclose()` (sends CLOSE), `reconnects`,
  `sub_id`; leaving an `async for` early also sends CLOSE.
  `await client.connection()` opens/returns the authenticated connection (e.g. to fail fast),
  `await client.max_limit()` is the relay's NIP-11 page size.
* `BuzzError` — `error` (category), `message`, `retryable`, `details`, `exit_code`, `to_json()`.
* `EOSE` — the end-of-stored-events sentinel yielded by subscriptions.
* `with_retries(operation, *, attempts=7)` — orchestrator.md §7.3 retry policy for a
  zero-argument coroutine function (retryable or `rate-limited` errors, 1, 2, 4 … 32 s, honouring
  `retry in N s` hints, jitter ×[1, 1.5]).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestra.buzz.client import BuzzClient
    from orchestra.buzz.errors import EOSE, BuzzError
    from orchestra.buzz.retry import with_retries

__all__ = ["EOSE", "BuzzClient", "BuzzError", "with_retries"]

_LAZY = {
    "BuzzClient": "orchestra.buzz.client",
    "BuzzError": "orchestra.buzz.errors",
    "EOSE": "orchestra.buzz.errors",
    "with_retries": "orchestra.buzz.retry",
}


def __getattr__(name: str) -> Any:
    # Lazy so that `buzz --help` does not pay for websockets and the crypto stack.
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'orchestra.buzz' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
