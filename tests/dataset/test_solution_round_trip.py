"""Offline solution round trip (dataset.md §2.9): each solve.sh runs against a fake `buzz`
seeded from the task's buzz-fixture.toml, the recorded relay state becomes evidence through the
orchestrator's real evidence builder, and the task's verifier must give `reward` 1.0; a second
run must not publish again. The negative solutions of tests/fixtures/negative-solutions go
through the same trip and must score exactly the metrics their headers promise."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evidence_builder import AGENT_ID, AGENT_PUBKEY, USER_PUBKEY
from positives import TASKS
from verifier_harness import TASKS_ROOT, run_verifier

from orchestra.config.fixture import Fixture, load_fixture
from orchestra.evidence.normalize import build_evidence

FAKE_BUZZ = Path(__file__).resolve().parent / "fake_buzz.py"
NEGATIVES = TASKS_ROOT.parents[1] / "tests" / "fixtures" / "negative-solutions"
HEADER_LINE = re.compile(r"^# (?:caught-by|expect): (\w+) = ([01]\.0)$", re.MULTILINE)
TRIAL_CHANNEL = "7f0c3a4e-0000-4000-8000-000000000001"
RANDOM_HEX = "5eed0123abcd"


def identity_pubkey(identity_id: str) -> str:
    return hashlib.sha256(f"directory:{identity_id}".encode()).hexdigest()


def profile(pubkey: str, name: str, about: str = "") -> dict[str, Any]:
    return {"pubkey": pubkey, "found": True, "name": name, "display_name": name, "about": about}


class FakeTrial:
    """The relay state the orchestrator would set up for one trial of `task` (orchestrator §7.2)."""

    def __init__(self, task: str, workdir: Path) -> None:
        self.task = task
        self.workdir = workdir
        self.fixture: Fixture = load_fixture(TASKS_ROOT / task)
        self.user_name = self.fixture.user_display_name or "user"
        self.entries = self.fixture.directory_entries()
        self.state_path = workdir / "relay.json"
        self.home = workdir / "home"
        state: dict[str, Any] = {
            "clock": 1_800_000_000,
            "agent_pubkey": AGENT_PUBKEY,
            "events": [],
            "channels": {},
            "members": {},
            "profiles": [profile(USER_PUBKEY, self.user_name), profile(AGENT_PUBKEY, AGENT_ID)],
            "memories": {seed.slug: seed.value for seed in self.fixture.memory_seeds},
        }
        state["profiles"] += [
            profile(identity_pubkey(e.key), e.name, e.about or "") for e in self.entries
        ]
        trial_members = [
            {"pubkey": AGENT_PUBKEY, "role": "owner"},
            {"pubkey": USER_PUBKEY, "role": "member"},
        ]
        trial_members += [
            {"pubkey": identity_pubkey(e.key), "role": "bot" if e.role == "bot" else "member"}
            for e in self.entries
            if e.channel_member
        ]
        state["channels"][TRIAL_CHANNEL] = {
            "channel_id": TRIAL_CHANNEL,
            "name": f"trial-{task}",
            "archived": False,
        }
        state["members"][TRIAL_CHANNEL] = trial_members
        instruction = (TASKS_ROOT / task / "instruction.md").read_text(encoding="utf-8").rstrip()
        self.task_event_id = self._post(state, USER_PUBKEY, instruction, [])
        self.scripted_events = [
            self._script(state, message) for message in self.fixture.scripted_messages
        ]
        self.state_path.write_text(json.dumps(state), encoding="utf-8")
        for file in self.fixture.files:
            local = self.home / Path(file.path).relative_to(self.fixture.home or "/")
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_text(file.render(RANDOM_HEX), encoding="utf-8")

    def _post(self, state: dict[str, Any], pubkey: str, content: str, tags: list[list[str]]) -> str:
        state["clock"] += 1
        event_id = hashlib.sha256(f"{state['clock']}:{content}".encode()).hexdigest()
        event = {"id": event_id, "pubkey": pubkey, "created_at": state["clock"], "kind": 9}
        state["events"].append({**event, "tags": [["h", TRIAL_CHANNEL], *tags], "content": content})
        return event_id

    def _script(self, state: dict[str, Any], message: Any) -> dict[str, Any]:
        by_id = {entry.key: entry for entry in self.entries}
        actor = (
            USER_PUBKEY if message.actor == "user" else identity_pubkey(by_id[message.actor].key)
        )
        tags = [["e", self.task_event_id, "", "reply"]] if message.reply_to_task else []
        tags += [["p", AGENT_PUBKEY]] if message.mention_orchestrator else []
        event_id = self._post(state, actor, message.render(AGENT_ID, self.user_name), tags)
        reply_to = self.task_event_id if message.reply_to_task else None
        return {
            "label": message.label,
            "event_id": event_id,
            "actor": message.actor,
            "reply_to_event_id": reply_to,
        }

    def run(self, script: Path) -> subprocess.CompletedProcess[str]:
        bin_dir = self.workdir / "bin"
        bin_dir.mkdir(exist_ok=True)
        buzz = bin_dir / "buzz"
        buzz.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_BUZZ}" "$@"\n')
        buzz.chmod(0o755)
        env = {
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "HOME": str(self.home),
            "TMPDIR": str(self.workdir),
            "FAKE_BUZZ_STATE": str(self.state_path),
            "BUZZ_CHANNEL_ID": TRIAL_CHANNEL,
            "BUZZ_REPLY_TO": self.task_event_id,
            "BUZZ_REQUESTER_PUBKEY": USER_PUBKEY,
            "BUZZ_REQUESTER_NAME": self.user_name,
        }
        return subprocess.run(
            ["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
        )

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_path.read_text(encoding="utf-8"))

    def evidence(self) -> dict[str, Any]:
        state = self.state()
        observed = []
        for name in self.fixture.observe_channel_names:
            for row in state["channels"].values():
                if row["name"].casefold() == name.casefold():
                    members = [
                        {"pubkey": m["pubkey"], "role": m["role"]}
                        for m in state["members"][row["channel_id"]]
                    ]
                    observed.append({**row, "members": members})
        directory = [
            {
                "identity_id": e.key,
                "name": e.name,
                "role": e.role,
                "pubkey": identity_pubkey(e.key),
                "about": e.about,
            }
            for e in self.entries
        ]
        return build_evidence(
            run_id="round-trip",
            trial_id=self.task,
            channel_id=TRIAL_CHANNEL,
            task_name=self.task,
            task_event_id=self.task_event_id,
            completion_message_id=None,
            identities={
                self.user_name: {"role": "user", "pubkey": USER_PUBKEY},
                AGENT_ID: {"role": "orchestrator", "pubkey": AGENT_PUBKEY},
            },
            directory=directory,
            scripted_events=self.scripted_events,
            observed_channels=observed,
            raw_events=state["events"],
        )

    def score(self) -> dict[str, float]:
        skill = [f.render(RANDOM_HEX) for f in self.fixture.files] or [None]
        result = run_verifier(
            self.task, self.workdir / "scored", self.evidence(), skill_text=skill[0]
        )
        assert "error" not in result.details, result.details
        return result.metrics


@pytest.mark.parametrize("task", TASKS)
def test_reference_solution_scores_one_and_is_idempotent(task, tmp_path):
    trial = FakeTrial(task, tmp_path)
    solve = TASKS_ROOT / task / "solution" / "solve.sh"
    first = trial.run(solve)
    assert first.returncode == 0, first.stderr
    assert trial.score()["reward"] == 1.0
    events_after_first = trial.state()["events"]
    second = trial.run(solve)
    assert second.returncode == 0, second.stderr
    assert trial.state()["events"] == events_after_first


@pytest.mark.parametrize("task", sorted(p.stem for p in NEGATIVES.glob("*.sh")))
def test_negative_solution_scores_what_its_header_promises(task, tmp_path):
    script = NEGATIVES / f"{task}.sh"
    promised = {name: float(value) for name, value in HEADER_LINE.findall(script.read_text())}
    trial = FakeTrial(task, tmp_path)
    done = trial.run(script)
    assert done.returncode == 0, done.stderr
    metrics = trial.score()
    assert {name: metrics[name] for name in promised} == promised
