"""buzz-cli.md §5.2 paging against an in-memory model of the relay's REQ semantics (pure)."""

import hashlib
import random

import pytest

from orchestra.buzz.errors import BuzzError
from orchestra.buzz.paging import read_pages


def make_events(seconds: list[int]) -> list[dict]:
    return [
        {"id": hashlib.sha256(f"{i}".encode()).hexdigest(), "created_at": second}
        for i, second in enumerate(seconds)
    ]


class ModelRelay:
    """Newest `min(limit, max_limit)` matches, created_at descending then id ascending."""

    def __init__(self, events: list[dict], max_limit: int) -> None:
        self.events = events
        self.max_limit = max_limit
        self.filters: list[dict] = []

    async def query(self, query: dict) -> list[dict]:
        self.filters.append(query)
        matches = [
            e
            for e in self.events
            if query.get("since", 0) <= e["created_at"] <= query.get("until", 2**53)
        ]
        matches.sort(key=lambda e: (-e["created_at"], e["id"]))
        return matches[: min(query.get("limit", self.max_limit), self.max_limit)]


def ordered(events: list[dict]) -> list[dict]:
    return sorted(events, key=lambda e: (e["created_at"], e["id"]))


async def test_reads_everything_across_many_pages():
    events = make_events([1000 + i // 3 for i in range(1203)])
    relay = ModelRelay(events, 500)
    result, more = await read_pages(relay.query, {}, max_limit=500, wanted=None)
    assert result == ordered(events)
    assert not more


async def test_a_page_boundary_inside_a_crowded_second_loses_nothing():
    seconds = [10] * 3 + [20] * 4 + [30] * 3  # the first page of 5 ends inside second 20
    events = make_events(seconds)
    relay = ModelRelay(events, 5)
    result, _ = await read_pages(relay.query, {}, max_limit=5, wanted=None)
    assert result == ordered(events)


async def test_a_second_holding_max_limit_events_is_an_error_not_a_cut():
    relay = ModelRelay(make_events([5] * 2 + [7] * 5), 5)
    with pytest.raises(BuzzError) as caught:
        await read_pages(relay.query, {}, max_limit=5, wanted=None)
    assert caught.value.error == "relay_error"
    assert caught.value.retryable is False
    assert caught.value.message == "cannot page completely: 5 or more events share created_at 7"


async def test_wanted_returns_the_newest_and_reports_older_ones():
    events = make_events(list(range(100, 130)))
    relay = ModelRelay(events, 500)
    result, more = await read_pages(relay.query, {}, max_limit=500, wanted=10)
    assert result == ordered(events)[-10:]
    assert more
    assert relay.filters[0]["limit"] == 11


async def test_exactly_wanted_events_means_nothing_older():
    events = make_events(list(range(100, 110)))
    result, more = await read_pages(ModelRelay(events, 500).query, {}, max_limit=500, wanted=10)
    assert len(result) == 10
    assert not more


async def test_before_is_strict_and_since_inclusive():
    events = make_events([1, 2, 3, 4, 5, 6])
    relay = ModelRelay(events, 2)
    result, _ = await read_pages(relay.query, {"since": 2}, max_limit=2, wanted=None, before=5)
    assert [e["created_at"] for e in result] == [2, 3, 4]


async def test_before_zero_matches_nothing_without_a_query():
    relay = ModelRelay(make_events([1]), 5)
    assert await read_pages(relay.query, {}, max_limit=5, wanted=None, before=0) == ([], False)
    assert relay.filters == []


@pytest.mark.parametrize("seed", range(20))
async def test_random_histories_match_a_brute_force_answer(seed):
    rng = random.Random(seed)
    max_limit = rng.randint(2, 6)
    seconds = []
    for second in range(rng.randint(1, 25)):
        seconds += [second] * rng.randint(0, max_limit - 1)
    events = make_events(seconds)
    wanted = rng.choice([None, 1, 3, 10, 40])
    result, more = await read_pages(
        ModelRelay(events, max_limit).query, {}, max_limit=max_limit, wanted=wanted
    )
    expected = ordered(events) if wanted is None else ordered(events)[-wanted:]
    assert result == expected
    assert more == (wanted is not None and len(events) > wanted)
