"""Evidence export against a real relay: paging across pages, observed channels (§8.3-§8.6)."""

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from orchestra.buzz import BuzzClient
from orchestra.evidence.export import EvidenceContext, EvidenceExportError, export_evidence
from orchestra.nostr.keys import Keys
from orchestra.paths import TrialPaths

pytestmark = pytest.mark.slow


async def post_many(client: Any, channel: str, created_at: list[int]) -> list[str]:
    """Publish kind-9 messages with chosen timestamps (several per second, like a busy team)."""
    results = await asyncio.gather(
        *(
            client.publish(9, f"m{i}", [["h", channel]], created_at=ts)
            for i, ts in enumerate(created_at)
        )
    )
    return [r["event_id"] for r in results]


def context(channel: str, user: Keys, agent: Keys, task_event_id: str | None) -> EvidenceContext:
    return EvidenceContext(
        run_id="job",
        trial_id="trial",
        channel_id=channel,
        task_name="busy",
        task_event_id=task_event_id,
        completion_message_id=None,
        identities={
            "user": {"role": "user", "pubkey": user.pubkey},
            "solo-1": {"role": "orchestrator", "pubkey": agent.pubkey},
        },
        directory=[],
        scripted_events=[],
        observe_channel_names=["ev-observed"],
        agent_pubkeys=[agent.pubkey],
        arrival={},
    )


async def test_export_pages_a_busy_channel_completely(relay_url: str, tmp_path: Path) -> None:
    user_keys, agent_keys = Keys.generate(), Keys.generate()
    base = int(time.time()) - 20
    async with (
        BuzzClient.from_keys(relay_url, user_keys) as user,
        BuzzClient.from_keys(relay_url, agent_keys) as agent,
    ):
        channel = (await user.channels_create(name="ev-busy", visibility="private"))["channel_id"]
        await user.channels_add_member(channel=channel, pubkey=agent_keys.pubkey)
        observed = await agent.channels_create(name="ev-observed", visibility="private", ttl=3600)
        await agent.mem_set(slug="core", value="prefers metric units")
        await agent.mem_set(slug="scratch", value="temporary")
        await agent.mem_rm(slug="scratch")
        task = await user.messages_send(channel=channel, content="task")
        # 60 per second: every page boundary cuts a second in the middle
        sent = [
            task["event_id"],
            *await post_many(user, channel, [base + i // 60 for i in range(245)]),
        ]
        trial = TrialPaths(tmp_path / "trial")
        evidence = await export_evidence(
            context(channel, user_keys, agent_keys, task["event_id"]),
            user_reader=user,
            orchestrator_reader=agent,
            memory_readers={"solo-1": agent},
            trial=trial,
        )
    assert evidence["message_count"] == len(sent) == 246
    members = {row["pubkey"]: row["role"] for row in evidence["channel_members"]}
    assert members == {user_keys.pubkey: "owner", agent_keys.pubkey: "member"}
    # decrypted with the agent's own keys; a removed entry is gone; no key material is written
    (memory,) = evidence["agent_memory"]["solo-1"]
    assert (memory["slug"], memory["value"]) == ("core", "prefers metric units")
    assert agent_keys.secret.hex() not in trial.evidence_json.read_text()
    assert evidence["truncated"] is False
    assert {m["id"] for m in evidence["messages"]} == set(sent)
    assert evidence["messages"][-1]["id"] == task["event_id"]  # the newest second
    created_at = [m["created_at"] for m in evidence["messages"]]
    assert created_at == sorted(created_at)
    row = evidence["observed_channels"][0]
    assert row["channel_id"] == observed["channel_id"] and row["ttl_seconds"] == 3600
    assert row["members"] == [{"pubkey": agent_keys.pubkey, "role": "owner"}]
    on_disk = trial.evidence_json.read_text()
    assert on_disk.endswith("\n") and json.loads(on_disk) == evidence


async def test_more_than_a_page_in_one_second_fails_the_export(
    relay_url: str, tmp_path: Path
) -> None:
    user_keys, agent_keys = Keys.generate(), Keys.generate()
    async with (
        BuzzClient.from_keys(relay_url, user_keys) as user,
        BuzzClient.from_keys(relay_url, agent_keys) as agent,
    ):
        channel = (await user.channels_create(name="ev-same-second", visibility="private"))[
            "channel_id"
        ]
        await post_many(user, channel, [int(time.time()) - 5] * 205)
        trial = TrialPaths(tmp_path / "trial")
        with pytest.raises(EvidenceExportError, match="share one second"):
            await export_evidence(
                context(channel, user_keys, agent_keys, None),
                user_reader=user,
                orchestrator_reader=agent,
                memory_readers={"solo-1": agent},
                trial=trial,
            )
    assert "share one second" in trial.evidence_error_txt.read_text()
    assert not trial.evidence_json.exists() and not trial.artifacts_evidence_json.exists()
