"""Evidence export through the client library (orchestrator.md §8.3-§8.6)."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from orchestra.errors import TrialFailure
from orchestra.evidence.normalize import TRANSCRIPT_CAP, build_evidence, transcript_of
from orchestra.evidence.trace import build_trace
from orchestra.files import empty_directory
from orchestra.jsonio import dumps_pretty, write_json_atomic, write_text_atomic
from orchestra.nostr import tags
from orchestra.nostr.kinds import Kind
from orchestra.paths import TrialPaths

PAGE_SIZE = 200


class EvidenceExportError(TrialFailure):
    """Raised for every export failure; the trial records it as `EvidenceExportError`."""


class MessageReader(Protocol):
    """The part of `orchestra.buzz.BuzzClient` that reads a channel's messages."""

    async def messages_get(
        self, channel: str, limit: int = ..., before: int | None = ...
    ) -> list[dict[str, Any]]: ...


class TrialUserReader(MessageReader, Protocol):
    """The trial user's reads: the channel's messages and its member list (§8.4, §8.7)."""

    async def channels_members(self, channel: str) -> list[dict[str, Any]]: ...


class MemoryReader(Protocol):
    """The part of `orchestra.buzz.BuzzClient` that lists and reads its own agent memory: the
    client holds the agent's keys (the orchestrator generated them), so it decrypts (§8.8)."""

    async def mem_ls(self) -> list[dict[str, Any]]: ...

    async def mem_get(self, slug: str) -> dict[str, Any]: ...


class ChannelReader(Protocol):
    """The part of `orchestra.buzz.BuzzClient` that finds observed channels."""

    async def channels_search(
        self, query: str, exact: bool = ..., include_archived: bool = ...
    ) -> list[dict[str, Any]]: ...

    async def channels_members(self, channel: str) -> list[dict[str, Any]]: ...

    async def query(
        self, filters: list[dict[str, Any]], sub_id: str | None = None
    ) -> list[dict[str, Any]]: ...


Operation = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]


async def _direct(call: Callable[[], Awaitable[Any]]) -> Any:
    return await call()


async def collect_channel_events(
    reader: MessageReader, channel_id: str, *, run: Operation = _direct
) -> list[dict[str, Any]]:
    """Read the channel newest first in pages of 200, de-duplicated, up to just over the cap.

    Each next page asks for `before` = smallest created_at seen + 1, so events sharing the
    boundary second are fetched again whatever the bound's inclusivity; a full page adding no
    new id proves nothing about completeness and is an export failure (§8.4).
    """
    collected: dict[str, dict[str, Any]] = {}
    before: int | None = None
    while True:
        kwargs: dict[str, Any] = {"channel": channel_id, "limit": PAGE_SIZE}
        if before is not None:
            kwargs["before"] = before
        page = await run(functools.partial(reader.messages_get, **kwargs))
        if not isinstance(page, list):
            raise EvidenceExportError(f"messages get returned {type(page).__name__}, not a list")
        new_ids = 0
        for event in page:
            event_id = event.get("id") if isinstance(event, dict) else None
            if isinstance(event_id, str) and event_id not in collected:
                collected[event_id] = event
                new_ids += 1
        if len(page) < PAGE_SIZE or len(collected) > TRANSCRIPT_CAP:
            return list(collected.values())
        if new_ids == 0:
            raise EvidenceExportError(
                f"cannot prove a complete transcript: more than {PAGE_SIZE} events share one "
                f"second before {before}"
            )
        created = [
            e["created_at"] for e in collected.values() if isinstance(e.get("created_at"), int)
        ]
        if not created:
            raise EvidenceExportError("messages get returned events without created_at")
        before = min(created) + 1


def _ttl_from_metadata(events: Sequence[Mapping[str, Any]]) -> int | None:
    for event in sorted(events, key=lambda e: e.get("created_at") or 0, reverse=True):
        ttl = tags.first_value(tags.of_event(event), "ttl")
        try:
            return int(ttl) if ttl is not None else None
        except ValueError:
            return None
    return None


@dataclass
class ObservedChannels:
    rows: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0


async def collect_observed_channels(
    reader: ChannelReader,
    names: Sequence[str],
    agent_pubkeys: Sequence[str],
    *,
    run: Operation = _direct,
) -> ObservedChannels:
    """Snapshot named channels as seen by the orchestrator agent (§8.3).

    Rows whose members include none of this trial's agents are dropped: a same-named channel
    created by another trial on the shared relay must not leak into this trial's evidence.
    """
    observed = ObservedChannels()
    agents = set(agent_pubkeys)
    for name in names:
        rows = await run(
            functools.partial(reader.channels_search, query=name, exact=True, include_archived=True)
        )
        for row in rows:
            channel_id = row.get("channel_id") if isinstance(row, dict) else None
            if not isinstance(channel_id, str) or not channel_id:
                continue
            members = await run(functools.partial(reader.channels_members, channel=channel_id))
            reduced = [{"pubkey": m.get("pubkey"), "role": m.get("role")} for m in members]
            if not agents & {m["pubkey"] for m in reduced}:
                observed.dropped += 1
                continue
            snapshot = dict(row)
            if "ttl_seconds" not in snapshot:
                metadata = await run(
                    functools.partial(
                        reader.query, [{"kinds": [Kind.CHANNEL_METADATA], "#d": [channel_id]}]
                    )
                )
                snapshot["ttl_seconds"] = _ttl_from_metadata(metadata)
            snapshot["members"] = reduced
            observed.rows.append(snapshot)
    return observed


async def collect_channel_members(
    reader: TrialUserReader, channel_id: str, *, run: Operation = _direct
) -> list[dict[str, Any]]:
    """The trial channel's member list at export, `{pubkey, role, name}` each (§8.7)."""
    members = await run(functools.partial(reader.channels_members, channel=channel_id))
    return [
        {"pubkey": row.get("pubkey"), "role": row.get("role"), "name": row.get("name")}
        for row in members
    ]


async def collect_agent_memory(
    readers: Mapping[str, MemoryReader], *, run: Operation = _direct
) -> dict[str, list[dict[str, Any]]]:
    """Each agent's live memory entries at export, decrypted by its own client (§8.8)."""
    memory: dict[str, list[dict[str, Any]]] = {}
    for agent_id, reader in readers.items():
        listed = await run(reader.mem_ls)
        entries = []
        for row in listed:
            entry = await run(functools.partial(reader.mem_get, slug=row["slug"]))
            entries.append({key: entry.get(key) for key in ("slug", "value", "hash", "updated_at")})
        memory[agent_id] = entries
    return memory


def evidence_text(evidence: Mapping[str, Any]) -> str:
    """The evidence file's text (§8.5 format); the verifier is given exactly these bytes."""
    return dumps_pretty(evidence, ensure_ascii=True)


def write_evidence_files(evidence: Mapping[str, Any], trial: TrialPaths) -> None:
    """Host copy plus transcript, and a copy in the emptied artifacts dir (§8.5)."""
    text = evidence_text(evidence)
    write_text_atomic(trial.evidence_json, text)
    write_json_atomic(trial.transcript_json, transcript_of(evidence), ensure_ascii=True)
    empty_directory(trial.artifacts_dir)
    write_text_atomic(trial.artifacts_evidence_json, text)


def record_export_failure(error: BaseException, trial: TrialPaths) -> str:
    """Write `buzz-evidence-error.txt`, remove partial evidence; return the one-line reason."""
    reason = f"{type(error).__name__}: {error}"
    detail = "".join(traceback.format_exception(error))
    write_text_atomic(trial.evidence_error_txt, f"{reason}\n\n{detail}")
    for path in (trial.evidence_json, trial.transcript_json, trial.artifacts_evidence_json):
        path.unlink(missing_ok=True)
    return reason


@dataclass(frozen=True)
class EvidenceContext:
    """What the trial knows for certain, in the shapes of §8.1."""

    run_id: str
    trial_id: str
    channel_id: str
    task_name: str
    task_event_id: str | None
    completion_message_id: str | None
    identities: Mapping[str, Mapping[str, Any]]
    directory: Sequence[Mapping[str, Any]]
    scripted_events: Sequence[Mapping[str, Any]]
    observe_channel_names: Sequence[str]
    agent_pubkeys: Sequence[str]
    arrival: Mapping[str, int]
    #: every event the trial's identities could read, in the relay's order (§8.9)
    captured: Sequence[Mapping[str, Any]] = ()
    #: what the relay's database held for the trial's window, in its storing order (§8.9)
    stored: Sequence[Mapping[str, Any]] = ()
    #: `database` or `readable`: what `relay_events` covers (§8.9)
    relay_events_scope: str = "readable"
    #: why the capture is incomplete, if it is: an export failure (§8.6)
    capture_failure: str | None = None
    agent_files: Sequence[Mapping[str, Any]] = ()  # §8.10


async def export_evidence(
    context: EvidenceContext,
    *,
    user_reader: TrialUserReader,
    orchestrator_reader: ChannelReader,
    memory_readers: Mapping[str, MemoryReader],
    trial: TrialPaths,
    run: Operation = _direct,
    log: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any]:
    """Collect, build and write the evidence; raise `EvidenceExportError` on any failure.

    `memory_readers`: agent id -> that agent's own client (its memory decrypts only with its
    keys; the keys never reach the evidence). On failure the error file is written and partial
    files removed before raising.
    """
    try:
        if context.capture_failure is not None:
            raise EvidenceExportError(
                f"the trial's capture is incomplete: {context.capture_failure}"
            )
        trace = build_trace(
            context.captured,
            trial_channel_id=context.channel_id,
            identities=context.identities,
            directory=context.directory,
            stored=context.stored,
        )
        observed = await collect_observed_channels(
            orchestrator_reader,
            context.observe_channel_names,
            context.agent_pubkeys,
            run=run,
        )
        if observed.dropped:
            log(
                f"evidence: dropped {observed.dropped} observed channel row(s) without trial agents"
            )
        raw_events = await collect_channel_events(user_reader, context.channel_id, run=run)
        members = await collect_channel_members(user_reader, context.channel_id, run=run)
        memory = await collect_agent_memory(memory_readers, run=run)
        evidence = build_evidence(
            run_id=context.run_id,
            trial_id=context.trial_id,
            channel_id=context.channel_id,
            task_name=context.task_name,
            task_event_id=context.task_event_id,
            completion_message_id=context.completion_message_id,
            identities=context.identities,
            directory=context.directory,
            scripted_events=context.scripted_events,
            observed_channels=observed.rows,
            raw_events=raw_events,
            arrival=context.arrival,
            channel_members=members,
            agent_memory=memory,
            trace=trace.trace,
            relay_events=trace.relay_events,
            relay_events_scope=context.relay_events_scope,
            agent_files=context.agent_files,
        )
        write_evidence_files(evidence, trial)
        return evidence
    except Exception as error:
        reason = record_export_failure(error, trial)
        raise EvidenceExportError(reason) from error
