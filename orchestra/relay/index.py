"""The live-subscription index (protocol.md §5.4, §15.4): which filters can match an event.

Each filter is filed under the values of its most selective field (ids, then authors, then a
tag letter, then kinds; the field with the fewest values wins), combined with its kinds when
that stays small, so an event is tested only against filters that share one of those values
with it. Time bounds are indexed too: a filter whose `since` is still ahead or whose `until`
has passed sits in a side index that only events dated in the future or the past consult.
So the cost per event does not depend on subscriptions that cannot match it.
"""

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from orchestra.nostr.event import Event
from orchestra.nostr.filters import Filter

# Filters with at most this many (value, kind) pairs are filed under the pairs.
MAX_COMPOSITE_KEYS = 64
# Events dated within this many seconds of the relay's clock consult only the current index,
# so filters move between the indexes with this much slack.
CLOCK_SLACK_SECONDS = 5
# A filter whose `until` is older than the oldest acceptable `created_at` is dropped, with this
# margin for events validated a while before they are fanned out.
EXPIRY_SLACK_SECONDS = 300

# (field, value) or (field, value, kind): the field is "ids", "authors", "kinds" or a tag letter.
Key = tuple[str, str | int] | tuple[str, str, int]
_REMOVED = Filter()  # what a removed entry keeps, so a pending move pins nothing of its owner
Owner = TypeVar("Owner")  # what an entry belongs to and `candidates` leads back to


@dataclass(eq=False, slots=True)
class Entry(Generic[Owner]):
    """One filter of one subscription. `owner` is what `candidates` yields (the subscription)."""

    owner: Owner | None  # None once removed
    filter: Filter
    keys: tuple[Key, ...] | None  # None: filed under no value (tested against every event)
    home: "_KeyIndex[Owner] | None" = None
    scheduled: bool = False  # a move between indexes is pending for it


def filter_keys(f: Filter) -> tuple[Key, ...] | None:
    choices: list[tuple[str, frozenset[str]]] = []
    if f.ids is not None:
        choices.append(("ids", f.ids))
    if f.authors is not None:
        choices.append(("authors", f.authors))
    choices.extend(f.tags.items())
    if choices:
        name, values = min(choices, key=lambda choice: len(choice[1]))
        if f.kinds is not None and len(values) * len(f.kinds) <= MAX_COMPOSITE_KEYS:
            return tuple((name, value, kind) for value in values for kind in f.kinds)
        return tuple((name, value) for value in values)
    if f.kinds is not None:
        return tuple(("kinds", kind) for kind in f.kinds)
    return None


# Dictionaries never shrink by themselves: one that has lost this share of its keys since its
# peak is copied, so the memory of a flood of subscriptions goes back.
SHRINK_BELOW = 4


class _KeyIndex(Generic[Owner]):
    def __init__(self) -> None:
        self._by_key: dict[Key, list[Entry[Owner]]] = {}
        self._peak = 0
        self._unkeyed: list[Entry[Owner]] = []
        self._letters: dict[str, int] = {}  # tag letters in use -> number of keys

    def __len__(self) -> int:
        return len(self._unkeyed) + sum(len(entries) for entries in self._by_key.values())

    def add(self, entry: Entry[Owner]) -> None:
        entry.home = self
        if entry.keys is None:
            self._unkeyed.append(entry)
            return
        for key in entry.keys:
            entries = self._by_key.get(key)
            if entries is None:
                self._by_key[key] = [entry]
                if len(key[0]) == 1:
                    self._letters[key[0]] = self._letters.get(key[0], 0) + 1
            else:
                entries.append(entry)
        self._peak = max(self._peak, len(self._by_key))

    def remove(self, entry: Entry[Owner]) -> None:
        entry.home = None
        if entry.keys is None:
            self._unkeyed.remove(entry)
            return
        for key in entry.keys:
            entries = self._by_key[key]
            entries.remove(entry)
            if not entries:
                del self._by_key[key]
                if len(key[0]) == 1:
                    self._letters[key[0]] -= 1
                    if not self._letters[key[0]]:
                        del self._letters[key[0]]
        if self._peak > 1024 and len(self._by_key) * SHRINK_BELOW < self._peak:
            self._by_key = dict(self._by_key)
            self._peak = len(self._by_key)

    def candidates(self, event: Event) -> Iterator[list[Entry[Owner]]]:
        """Lists of entries that may match `event` (a list can come up more than once)."""
        if self._unkeyed:
            yield self._unkeyed
        if not self._by_key:
            return
        kind = event.kind
        values: list[tuple[str, str]] = [("ids", event.id), ("authors", event.pubkey)]
        if self._letters:
            letters = self._letters
            values.extend(
                (tag[0], tag[1]) for tag in event.tags if len(tag) >= 2 and tag[0] in letters
            )
        by_key = self._by_key
        for name, value in values:
            for key in ((name, value), (name, value, kind)):
                entries = by_key.get(key)
                if entries:
                    yield entries
        entries = by_key.get(("kinds", kind))
        if entries:
            yield entries


class SubscriptionIndex(Generic[Owner]):
    """Entries in three indexes by time: current (may match an event dated now), future
    (`since` ahead of the clock) and past (`until` behind it). Call `advance(now)` before
    `candidates` so entries move as the clock passes their bounds."""

    def __init__(self, lower_limit_seconds: int) -> None:
        self._current: _KeyIndex[Owner] = _KeyIndex()
        self._future: _KeyIndex[Owner] = _KeyIndex()
        self._past: _KeyIndex[Owner] = _KeyIndex()
        # The age beyond which no event is accepted: past entries older than that are dropped.
        self._lower_limit = lower_limit_seconds
        self._moves: list[tuple[int, int, Entry[Owner]]] = []  # (when, tie-break, entry)
        self._dead_moves = 0  # moves of entries removed since (skipped when due)
        self._sequence = itertools.count()
        self._now = 0

    def __len__(self) -> int:
        return len(self._current) + len(self._future) + len(self._past)

    def add(self, owner: Owner, f: Filter, now: int) -> Entry[Owner] | None:
        """File a filter; None when it can never match a live event."""
        self._now = max(self._now, now)
        entry = Entry(owner, f, filter_keys(f))
        if not self._place(entry):
            return None
        return entry

    def remove(self, entry: Entry[Owner]) -> None:
        if entry.home is not None:
            entry.home.remove(entry)  # its pending move is skipped once it has no home
        entry.owner, entry.filter, entry.keys = None, _REMOVED, None
        if entry.scheduled:
            entry.scheduled = False
            self._dead_moves += 1
            # Compact once half are dead: removed entries would otherwise linger (and keep
            # the memory pages they sit on) until their time comes, maybe years ahead.
            if self._dead_moves * 2 > len(self._moves):
                self._moves = [move for move in self._moves if move[2].scheduled]
                heapq.heapify(self._moves)
                self._dead_moves = 0

    def _place(self, entry: Entry[Owner]) -> bool:
        f, now = entry.filter, self._now
        if f.since is not None and f.since > now + CLOCK_SLACK_SECONDS:
            self._future.add(entry)
            self._schedule(f.since - CLOCK_SLACK_SECONDS, entry)
        elif f.until is not None and f.until < now - CLOCK_SLACK_SECONDS:
            expires = f.until + self._lower_limit + EXPIRY_SLACK_SECONDS
            if expires <= now:
                return False  # older than anything the relay still accepts
            self._past.add(entry)
            self._schedule(expires, entry)
        else:
            self._current.add(entry)
            if f.until is not None:
                self._schedule(f.until + CLOCK_SLACK_SECONDS + 1, entry)
        return True

    def _schedule(self, when: int, entry: Entry[Owner]) -> None:
        entry.scheduled = True
        heapq.heappush(self._moves, (when, next(self._sequence), entry))

    def advance(self, now: int) -> None:
        """Move entries whose time bounds the clock has passed."""
        self._now = max(self._now, now)
        moves = self._moves
        while moves and moves[0][0] <= self._now:
            _, _, entry = heapq.heappop(moves)
            if not entry.scheduled:
                self._dead_moves -= 1
                continue  # removed meanwhile
            entry.scheduled = False
            assert entry.home is not None
            entry.home.remove(entry)
            self._place(entry)

    def candidates(self, event: Event) -> Iterator[Entry[Owner]]:
        """Entries that may match `event`, each at most once."""
        indexes = [self._current]
        if event.created_at < self._now - CLOCK_SLACK_SECONDS:
            indexes.append(self._past)
        elif event.created_at > self._now + CLOCK_SLACK_SECONDS:
            indexes.append(self._future)
        seen_lists: set[int] = set()
        seen_entries: set[int] = set()  # entries filed under several keys the event has
        for index in indexes:
            for entries in index.candidates(event):
                if id(entries) in seen_lists:
                    continue
                seen_lists.add(id(entries))
                for entry in entries:
                    if entry.keys is not None and len(entry.keys) > 1:
                        if id(entry) in seen_entries:
                            continue
                        seen_entries.add(id(entry))
                    yield entry
