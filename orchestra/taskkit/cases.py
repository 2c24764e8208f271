"""A task's adversarial verifier tests as data, `verifier-cases.toml` (docs/writing-a-task.md).

Each `[[case]]` is a trial written as the messages agents and people posted: the kit turns it
into `buzz-evidence.json` with the orchestrator's own evidence builder
(`orchestra.evidence.normalize.build_evidence`), after the task event and the fixture's scripted
messages, so the derived fields a verifier reads are exactly what a real export would hold.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from orchestra.buzz.ops_memory import value_hash
from orchestra.config.errors import ConfigError, display_path, from_validation_error, raise_if_any
from orchestra.config.fixture import USER_ACTOR
from orchestra.config.loading import load_toml
from orchestra.config.task import Task
from orchestra.evidence.normalize import build_evidence

CASES_FILE_NAME = "verifier-cases.toml"
#: The orchestrator agent of the oracle manifest's solo roster (what real trials record).
AGENT_ID = "solo-1"
AGENT = "agent"
TASK_EVENT_ID = "task"
CHANNEL_ID = "trial-channel"
#: The trial user of a fixture without `user_display_name` (orchestrator.md §5.7).
PINNED_USER_NAME = "user"
FIRST_SECOND = 1_800_000_000

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


def _zero_or_one(value: float) -> float:
    if value not in (0.0, 1.0):
        raise ValueError(f"must be 0.0 or 1.0 (got {value!r})")
    return value


MetricValue = Annotated[float, AfterValidator(_zero_or_one)]


class CaseMessage(BaseModel):
    """One message of a case, as its author posted it."""

    model_config = _STRICT

    #: `agent`, `user` or a directory `identity_id`
    author: Annotated[str, Field(min_length=1)] = AGENT
    content: str
    #: `task`, a scripted label or the `id` of an earlier case message; absent: top-level
    reply_to: str | None = None
    #: people `p`-tagged: `agent`, `user`, directory identity ids or raw hex pubkeys
    mention: list[str] = Field(default_factory=list)
    id: str | None = None
    #: another channel than the trial's (a reply that landed elsewhere)
    channel: str | None = None


class Case(BaseModel):
    model_config = _STRICT

    name: Annotated[str, Field(min_length=1)]
    expect: dict[str, MetricValue]
    message: list[CaseMessage] = Field(default_factory=list)
    #: top-level evidence fields replaced after building (e.g. `truncated = true`)
    evidence: dict[str, Any] = Field(default_factory=dict)


class CasesFile(BaseModel):
    model_config = _STRICT

    case: list[Case] = Field(default_factory=list)


def cases_path(task_dir: Path) -> Path:
    return task_dir / CASES_FILE_NAME


def load_cases(task_dir: Path) -> list[Case]:
    """The task's cases; a missing or malformed file is a `ConfigError` naming file and field."""
    path = cases_path(task_dir)
    shown = display_path(path)
    try:
        cases = CasesFile.model_validate(load_toml(path)).case
    except ValidationError as exc:
        raise_if_any(from_validation_error(shown, exc, toml_style=True))
        raise
    names = [case.name for case in cases]
    raise_if_any(
        [
            ConfigError(shown, f"case[{index}].name", f'duplicate case name "{name}"')
            for index, name in enumerate(names)
            if name in names[:index]
        ]
    )
    return cases


def fake_pubkey(key: str) -> str:
    """A stable 64-hex pubkey per identity key (cases need distinct, not real, keys)."""
    return hashlib.sha256(f"verifier-case:{key}".encode()).hexdigest()


class CaseWorld:
    """The identities, directory and opening messages every case of one task shares."""

    def __init__(self, task: Task) -> None:
        fixture = task.fixture
        self.task = task
        self.user_name = fixture.user_display_name or PINNED_USER_NAME
        self.pubkeys = {USER_ACTOR: fake_pubkey(USER_ACTOR), AGENT: fake_pubkey(AGENT_ID)}
        self.directory: list[dict[str, Any]] = []
        # the trial channel as the agents find it (orchestrator.md §8.7): owner, agent, members
        self.channel_members = [
            {"pubkey": self.pubkeys[USER_ACTOR], "role": "owner", "name": self.user_name},
            {"pubkey": self.pubkeys[AGENT], "role": "member", "name": AGENT_ID},
        ]
        # the agent's memory as seeded before the task (§8.8); a case overrides what changed
        self.agent_memory = {
            AGENT_ID: [
                {
                    "slug": seed.slug,
                    "value": seed.value,
                    "hash": value_hash(seed.value),
                    "updated_at": FIRST_SECOND - 1,
                }
                for seed in fixture.memory_seeds
            ]
        }
        for entry in fixture.directory_entries():
            self.pubkeys[entry.key] = fake_pubkey(entry.key)
            self.directory.append(
                {
                    "identity_id": entry.key,
                    "name": entry.name,
                    "role": entry.role,
                    "pubkey": self.pubkeys[entry.key],
                    "about": entry.about or "",
                }
            )
            if entry.channel_member:
                role = "bot" if entry.role == "bot" else "member"
                self.channel_members.append(
                    {"pubkey": self.pubkeys[entry.key], "role": role, "name": entry.name}
                )

    def pubkey(self, who: str) -> str:
        """`agent`, `user`, an identity id, or a raw pubkey taken as written."""
        return self.pubkeys.get(who, who)

    def evidence(self, case: Case) -> dict[str, Any]:
        events: list[dict[str, Any]] = []

        def post(author: str, content: str, event_id: str, **how: Any) -> None:
            tags = [["h", how.get("channel") or CHANNEL_ID]]
            if how.get("reply_to") is not None:
                tags.append(["e", how["reply_to"], "", "reply"])
            tags += [["p", self.pubkey(who)] for who in how.get("mention", ())]
            events.append(
                {
                    "id": event_id,
                    "pubkey": self.pubkey(author),
                    "created_at": FIRST_SECOND + len(events),
                    "kind": 9,
                    "tags": tags,
                    "content": content,
                }
            )

        post(
            USER_ACTOR,
            f"@{AGENT_ID} {self.task.instruction()}",
            TASK_EVENT_ID,
            mention=[AGENT],
        )
        scripted = []
        for message in self.task.fixture.scripted_messages:
            reply_to = TASK_EVENT_ID if message.reply_to_task else None
            post(
                message.actor,
                message.render(AGENT_ID, self.user_name),
                message.label,
                reply_to=reply_to,
                mention=[AGENT] if message.mention_orchestrator else [],
            )
            scripted.append(
                {
                    "label": message.label,
                    "event_id": message.label,
                    "actor": message.actor,
                    "reply_to_event_id": reply_to,
                }
            )
        for index, written in enumerate(case.message):
            post(
                written.author,
                written.content,
                written.id or f"case-message-{index + 1}",
                reply_to=written.reply_to,
                mention=written.mention,
                channel=written.channel,
            )
        evidence = build_evidence(
            run_id="verifier-cases",
            trial_id=case.name,
            channel_id=CHANNEL_ID,
            task_name=self.task.short_name,
            task_event_id=TASK_EVENT_ID,
            completion_message_id=None,
            identities={
                self.user_name: {"role": "user", "pubkey": self.pubkeys[USER_ACTOR]},
                AGENT_ID: {"role": "orchestrator", "pubkey": self.pubkeys[AGENT]},
            },
            directory=self.directory,
            scripted_events=scripted,
            observed_channels=[],
            raw_events=events,
            channel_members=self.channel_members,
            agent_memory=self.agent_memory,
        )
        evidence.update(case.evidence)
        return evidence
