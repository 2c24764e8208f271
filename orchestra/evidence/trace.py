"""The whole trace of a trial from the events the relay accepted (orchestrator.md §8.9).

Pure, like `normalize`: the trial's live capture (`orchestra.trial.capture`) and the task kit's
case builder both hand their events, in the relay's order, to `build_trace`, so a verifier
case holds exactly what a real export holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestra.evidence.normalize import Message, author_lookup, normalize_message
from orchestra.nostr import tags as tag_list
from orchestra.nostr.event import kind_class

#: identity roles (§8.1) that are the trial's agents
AGENT_ROLES = frozenset({"orchestrator", "worker"})


class TraceEntry(Message):
    """One event the relay accepted: the §8.2 fields plus its place in the relay's order."""

    seq: int
    stored: bool


@dataclass(frozen=True)
class TrialTrace:
    """The `trace` and `relay_events` keys of the evidence (§8.9)."""

    trace: list[TraceEntry]
    relay_events: list[TraceEntry]


def _replacement_key(raw: Mapping[str, Any]) -> tuple[object, ...] | None:
    """What a later version of the event replaces it by (protocol.md §6); None for a
    regular event, which nothing replaces."""
    kind = raw.get("kind")
    if not isinstance(kind, int):
        return None
    match kind_class(kind):
        case "replaceable":
            return (kind, raw.get("pubkey"))
        case "addressable":
            return (kind, raw.get("pubkey"), tag_list.d_value(tag_list.of_event(raw)))
        case _:
            return None


def _is_ephemeral(raw: Mapping[str, Any]) -> bool:
    kind = raw.get("kind")
    return isinstance(kind, int) and kind_class(kind) == "ephemeral"


def agent_pubkeys(identities: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The pubkeys of the trial's agents among the §8.1 identities."""
    return {str(row["pubkey"]) for row in identities.values() if row["role"] in AGENT_ROLES}


def touched_channels(
    events: Sequence[Mapping[str, Any]], *, agents: set[str], trial_channel_id: str
) -> set[str]:
    """The trial channel and every channel an agent signed an event in: created, joined,
    left, posted to, changed members or metadata of (§8.9)."""
    touched = {trial_channel_id}
    for raw in events:
        if raw.get("pubkey") in agents:
            channel = tag_list.access_channel(raw.get("kind"), tag_list.of_event(raw))
            if channel is not None:
                touched.add(channel)
    return touched


def _keep_first(unique: dict[str, Mapping[str, Any]], raw: Mapping[str, Any]) -> None:
    """Add `raw` under its id unless the id came before; a harness notice (§8.4) never."""
    event_id = raw.get("id")
    if (
        isinstance(event_id, str)
        and event_id not in unique
        and not tag_list.is_harness_notice(tag_list.of_event(raw))
    ):
        unique[event_id] = raw


def build_trace(
    events: Iterable[Mapping[str, Any]],
    *,
    trial_channel_id: str,
    identities: Mapping[str, Mapping[str, Any]],
    directory: Sequence[Mapping[str, Any]],
    stored: Iterable[Mapping[str, Any]] = (),
) -> TrialTrace:
    """`events`: every event the relay accepted during the trial, in the relay's order (a
    repeated id counts once, where it first came). `seq` numbers them from 1 in that order,
    so one event has the same `seq` in `trace` and in `relay_events`. An ephemeral event, or
    one a later event of the same replacement key replaced, is `stored: false`. Harness
    notices are not evidence (§8.4) and take no `seq`.

    `stored`: what the relay's database held for the trial's window, in its storing order
    (§8.9 "What the relay stored"). Its events that `events` lacks are numbered after all of
    them, in that order, and join `relay_events` only: `trace` is what `events` makes it.
    """
    unique: dict[str, Mapping[str, Any]] = {}
    for raw in events:
        _keep_first(unique, raw)
    captured = len(unique)
    for raw in stored:
        _keep_first(unique, raw)
    ordered = list(unique.values())
    keys = [_replacement_key(raw) for raw in ordered]
    last_of_key = {key: position for position, key in enumerate(keys) if key is not None}
    agents = agent_pubkeys(identities)
    touched = touched_channels(ordered[:captured], agents=agents, trial_channel_id=trial_channel_id)
    lookup = author_lookup(identities, directory)
    trace: list[TraceEntry] = []
    relay_events: list[TraceEntry] = []
    for position, raw in enumerate(ordered):
        key = keys[position]
        is_stored = not _is_ephemeral(raw) and (key is None or last_of_key[key] == position)
        message = normalize_message(raw, lookup)
        # a relay-signed state event belongs to the channel its `d` names (protocol.md §10)
        message["channel_id"] = tag_list.access_channel(message["kind"], message["tags"])
        entry = TraceEntry(**message, seq=position + 1, stored=is_stored)
        if position < captured and (raw.get("pubkey") in agents or entry["channel_id"] in touched):
            trace.append(entry)
        if is_stored:
            relay_events.append(entry)
    return TrialTrace(trace=trace, relay_events=relay_events)
