"""Evidence paging and failure handling against an in-memory reader (orchestrator.md §8.4, §8.6).

The same code runs against a real relay in test_trial_relay.py; these cases need exact
control over page contents (more than 200 events in one second) that a relay test cannot
produce cheaply.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from orchestra.evidence.export import (
    EvidenceContext,
    EvidenceExportError,
    collect_channel_events,
    export_evidence,
)
from orchestra.paths import TrialPaths

CHANNEL = "0b9c1f5e-0000-4000-8000-000000000001"


class FakeReader:
    """`messages get` with the CLI's semantics: the newest `limit` with created_at < before."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        self.calls: list[dict[str, Any]] = []

    async def messages_get(self, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append(kwargs)
        before = kwargs.get("before")
        matching = [e for e in self.events if before is None or e["created_at"] < before]
        matching.sort(key=lambda e: (e["created_at"], e["id"]))
        return matching[-kwargs["limit"] :]

    async def channels_search(self, **kwargs: Any) -> list[dict[str, Any]]:
        return [
            {"channel_id": "c1", "name": kwargs["query"], "ttl_seconds": 3600},
            {"channel_id": "c2", "name": kwargs["query"]},
            {"channel_id": ""},
        ]

    async def channels_members(self, **kwargs: Any) -> list[dict[str, Any]]:
        pubkey = "bb" * 32 if kwargs["channel"] == "c1" else "dd" * 32
        return [{"pubkey": pubkey, "role": "owner", "name": "x"}]

    async def query(self, filters: list, sub_id: str | None = None) -> list:
        raise AssertionError("ttl_seconds present: no metadata query expected")

    async def mem_ls(self) -> list[dict[str, Any]]:
        return [{"slug": "core", "updated_at": 900, "bytes": 2, "hash": "h"}]

    async def mem_get(self, slug: str) -> dict[str, Any]:
        return {"slug": slug, "value": "v1", "hash": "h", "updated_at": 900, "event_id": "e"}


def events(count: int, per_second: int = 3) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{i:064x}",
            "pubkey": "bb" * 32,
            "created_at": 1000 + i // per_second,
            "kind": 9,
            "tags": [["h", CHANNEL]],
            "content": str(i),
            "sig": "",
        }
        for i in range(count)
    ]


async def test_pages_until_a_short_page() -> None:
    reader = FakeReader(events(450))
    collected = await collect_channel_events(reader, CHANNEL)
    assert len(collected) == 450
    assert reader.calls[0] == {"channel": CHANNEL, "limit": 200}
    assert reader.calls[1]["before"] == min(e["created_at"] for e in events(450)[-200:]) + 1


async def test_stops_after_the_cap() -> None:
    reader = FakeReader(events(1500))
    collected = await collect_channel_events(reader, CHANNEL)
    assert 1000 < len(collected) < 1500


async def test_more_than_a_page_in_one_second_is_an_export_failure() -> None:
    reader = FakeReader(events(260, per_second=300))
    with pytest.raises(EvidenceExportError, match="share one second"):
        await collect_channel_events(reader, CHANNEL)


def context(**overrides: Any) -> EvidenceContext:
    values: dict[str, Any] = dict(
        run_id="job",
        trial_id="trial",
        channel_id=CHANNEL,
        task_name="x",
        task_event_id=None,
        completion_message_id=None,
        identities={"solo-1": {"role": "orchestrator", "pubkey": "bb" * 32}},
        directory=[],
        scripted_events=[],
        observe_channel_names=["release"],
        agent_pubkeys=["bb" * 32],
        arrival={},
    )
    values.update(overrides)
    return EvidenceContext(**values)


async def test_export_writes_three_files_and_drops_foreign_channels(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "t")
    trial.artifacts_dir.mkdir(parents=True)
    (trial.artifacts_dir / "planted.json").write_text("{}")
    reader = FakeReader(events(5))
    lines: list[str] = []
    evidence = await export_evidence(
        context(),
        user_reader=reader,
        orchestrator_reader=reader,
        memory_readers={"solo-1": reader},
        trial=trial,
        log=lines.append,
    )
    assert [row["channel_id"] for row in evidence["observed_channels"]] == ["c1"]
    assert evidence["channel_members"] == [{"pubkey": "dd" * 32, "role": "owner", "name": "x"}]
    assert evidence["agent_memory"] == {
        "solo-1": [{"slug": "core", "value": "v1", "hash": "h", "updated_at": 900}]
    }
    assert evidence["observed_channels"][0]["members"] == [{"pubkey": "bb" * 32, "role": "owner"}]
    assert lines and "dropped 1" in lines[0]
    on_disk = json.loads(trial.evidence_json.read_text())
    assert on_disk == evidence
    assert trial.artifacts_evidence_json.read_text() == trial.evidence_json.read_text()
    assert not (trial.artifacts_dir / "planted.json").exists()
    transcript = json.loads(trial.transcript_json.read_text())
    assert transcript["message_count"] == 5 and transcript["channel_id"] == CHANNEL


async def test_export_failure_writes_the_error_file_and_removes_partials(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "t")
    trial.buzz_dir.mkdir(parents=True)
    trial.evidence_json.write_text("{}")

    class Broken(FakeReader):
        async def messages_get(self, **kwargs: Any) -> list[dict[str, Any]]:
            raise RuntimeError("relay went away")

    reader = Broken([])
    with pytest.raises(EvidenceExportError, match="relay went away"):
        await export_evidence(
            context(),
            user_reader=reader,
            orchestrator_reader=reader,
            memory_readers={"solo-1": reader},
            trial=trial,
        )
    assert "relay went away" in trial.evidence_error_txt.read_text()
    assert not trial.evidence_json.exists()
