"""Builds schema-v1 `buzz-evidence.json` documents for verifier tests.

Messages are written as raw relay events (tags and all) and turned into evidence by the
orchestrator's own normaliser (`orchestra.evidence.normalize.build_evidence`), so the derived
fields a verifier reads (`channel_id`, `reply_to_event_id`, `mentioned_pubkeys`) are exactly
what a real export would produce. Tests that forge a derived field edit the built document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestra.evidence.normalize import build_evidence

AGENT_ID = "solo-1"
AGENT_PUBKEY = "a" * 64
USER_PUBKEY = "e" * 64
CHANNEL_ID = "ch"
ROOT_ID = "root"
FIRST_SECOND = 1_800_000_000


@dataclass
class EvidenceBuilder:
    """One trial's relay state: the trial user, one orchestrator, directory, messages."""

    task_name: str
    user_name: str = "user"
    channel_id: str = CHANNEL_ID
    task_event_id: str | None = ROOT_ID
    identities: dict[str, dict[str, str]] = field(default_factory=dict)
    directory: list[dict[str, str]] = field(default_factory=list)
    scripted_events: list[dict[str, Any]] = field(default_factory=list)
    observed_channels: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.identities.setdefault(self.user_name, {"role": "user", "pubkey": USER_PUBKEY})
        self.identities.setdefault(AGENT_ID, {"role": "orchestrator", "pubkey": AGENT_PUBKEY})

    def post(
        self,
        pubkey: str,
        content: str,
        *,
        event_id: str | None = None,
        reply_to: str | None = None,
        mentions: tuple[str, ...] = (),
        channel: str | None = None,
    ) -> str:
        """Records a kind-9 event as the CLI would sign it; returns its id.

        Tags: `["h", channel]`, then the NIP-10 marked reply when `reply_to` is given, then one
        `p` tag per mention. `channel` defaults to the trial channel.
        """
        event_id = event_id or f"event-{len(self.events) + 1}"
        tags = [["h", channel or self.channel_id]]
        if reply_to is not None:
            tags.append(["e", reply_to, "", "reply"])
        tags += [["p", pubkey] for pubkey in mentions]
        self.events.append(
            {
                "id": event_id,
                "pubkey": pubkey,
                "created_at": FIRST_SECOND + len(self.events),
                "kind": 9,
                "tags": tags,
                "content": content,
            }
        )
        return event_id

    def task(self, content: str = "the task") -> str:
        """The trial user's task message (the thread root)."""
        return self.post(USER_PUBKEY, content, event_id=self.task_event_id)

    def agent(self, content: str, *, reply_to: str | None = ROOT_ID, **options: Any) -> str:
        """An agent message; a thread reply to the task unless `reply_to=None`."""
        return self.post(AGENT_PUBKEY, content, reply_to=reply_to, **options)

    def rewrite_answer(self, content: str, **options: Any) -> EvidenceBuilder:
        """Replaces the last message with an agent message under the same id (`agent` options)."""
        answer = self.events.pop()
        self.agent(content, event_id=answer["id"], **options)
        return self

    def replace_agent_messages(
        self, *replies: tuple[str, str | None, tuple[str, ...]]
    ) -> EvidenceBuilder:
        """Drops every agent message, then posts `replies` as (text, thread, mentions)."""
        self.events = [event for event in self.events if event["pubkey"] != AGENT_PUBKEY]
        for text, thread, mentions in replies:
            self.agent(text, reply_to=thread, mentions=mentions)
        return self

    def agent_before_answer(self, content: str, **options: Any) -> EvidenceBuilder:
        """Posts an agent message just before the last one (e.g. an acknowledgement)."""
        answer = self.events.pop()
        self.agent(content, **options)
        self.events.append({**answer, "created_at": self.events[-1]["created_at"] + 1})
        return self

    def add_directory(
        self, name: str, role: str, pubkey: str, *, identity_id: str | None = None, about: str = ""
    ) -> None:
        self.directory.append(
            {
                "identity_id": identity_id or name,
                "name": name,
                "role": role,
                "pubkey": pubkey,
                "about": about,
            }
        )

    def script(self, label: str, event_id: str, actor: str, *, reply_to_task: bool) -> None:
        """A scripted-events row (the message itself is posted separately)."""
        reply_to = self.task_event_id if reply_to_task else None
        row = {"label": label, "event_id": event_id, "actor": actor, "reply_to_event_id": reply_to}
        self.scripted_events.append(row)

    def build(self) -> dict[str, Any]:
        return build_evidence(
            run_id="unit-job",
            trial_id="unit-trial",
            channel_id=self.channel_id,
            task_name=self.task_name,
            task_event_id=self.task_event_id,
            completion_message_id=None,
            identities=self.identities,
            directory=self.directory,
            scripted_events=self.scripted_events,
            observed_channels=self.observed_channels,
            raw_events=self.events,
        )


def message(evidence: dict[str, Any], event_id: str) -> dict[str, Any]:
    """The evidence message with `event_id` (for tests that forge or damage one)."""
    return next(m for m in evidence["messages"] if m["id"] == event_id)


def last_agent_message(evidence: dict[str, Any]) -> dict[str, Any]:
    return [m for m in evidence["messages"] if m["pubkey"] == AGENT_PUBKEY][-1]
