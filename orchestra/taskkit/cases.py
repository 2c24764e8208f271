"""A task's adversarial verifier tests as data, `verifier-cases.toml` (docs/writing-a-task.md).

Each `[[case]]` is a trial written as the messages and other events agents and people signed
(in file order: the relay's order) and the files agents wrote: the kit turns it into
`buzz-evidence.json` with the orchestrator's own builders (`orchestra.evidence.normalize.
build_evidence`, `orchestra.evidence.trace.build_trace`), after the task event and the
fixture's scripted messages, so what a verifier reads is exactly what a real export would hold.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from orchestra.buzz.ops_memory import value_hash
from orchestra.config.errors import ConfigError, display_path, from_validation_error, raise_if_any
from orchestra.config.fixture import USER_ACTOR
from orchestra.config.loading import load_toml
from orchestra.config.task import Task
from orchestra.evidence.agent_files import agent_file_entry, ordered_agent_files
from orchestra.evidence.normalize import build_evidence
from orchestra.evidence.trace import build_trace
from orchestra.nostr.kinds import Kind

CASES_FILE_NAME = "verifier-cases.toml"
#: The orchestrator agent of the oracle manifest's solo roster (what real trials record).
AGENT_ID = "solo-1"
AGENT = "agent"
#: an author in no identity or directory: a key the agent made up (its events reach
#: `relay_events`, and `trace` in a channel the trial touched)
FRESH_KEY = "fresh-key"
TASK_EVENT_ID = "task"
CHANNEL_ID = "trial-channel"
#: The trial user of a fixture without `user_display_name` (orchestrator.md §5.7).
PINNED_USER_NAME = "user"
FIRST_SECOND = 1_800_000_000

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


def _absolute(path: str) -> str:
    if not PurePosixPath(path).is_absolute():
        raise ValueError(f"must be an absolute path, as the agent saw it (got {path!r})")
    return path


def _zero_or_one(value: float) -> float:
    if value not in (0.0, 1.0):
        raise ValueError(f"must be 0.0 or 1.0 (got {value!r})")
    return value


MetricValue = Annotated[float, AfterValidator(_zero_or_one)]
Step = Literal["message", "event"]
#: a `[[case]]`, `[[case.message]]` or `[[case.event]]` header line
_STEP_HEADER = re.compile(r"^\s*\[\[\s*case(?:\s*\.\s*(message|event))?\s*\]\]", re.MULTILINE)


class CaseMessage(BaseModel):
    """One message of a case, as its author posted it."""

    model_config = _STRICT

    #: `agent`, `user`, `fresh-key` or a directory `identity_id`
    author: Annotated[str, Field(min_length=1)] = AGENT
    content: str
    #: `task`, a scripted label or the `id` of an earlier case message; absent: top-level
    reply_to: str | None = None
    #: people `p`-tagged: `agent`, `user`, directory identity ids or raw hex pubkeys
    mention: list[str] = Field(default_factory=list)
    id: str | None = None
    #: another channel than the trial's (a reply that landed elsewhere, a channel an agent
    #: created: a `[[case.event]]` of kind 9007 creates it first)
    channel: str | None = None
    kind: int = Kind.MESSAGE
    #: tags beyond the channel, reply and mention tags, as written
    tags: list[list[str]] = Field(default_factory=list)


class CaseEvent(CaseMessage):
    """Any other event an agent or person signed: channel creation or metadata, membership,
    profile, memory, reaction, deletion. Tagged with `channel` only when it names one."""

    kind: int
    content: str = ""


class CaseFile(BaseModel):
    """A file an agent wrote (`agent_files`)."""

    model_config = _STRICT

    path: Annotated[str, AfterValidator(_absolute)]
    content: str


class Case(BaseModel):
    model_config = _STRICT

    name: Annotated[str, Field(min_length=1)]
    expect: dict[str, MetricValue]
    message: list[CaseMessage] = Field(default_factory=list)
    event: list[CaseEvent] = Field(default_factory=list)
    file: list[CaseFile] = Field(default_factory=list)
    #: top-level evidence fields replaced after building (e.g. `truncated = true`)
    evidence: dict[str, Any] = Field(default_factory=dict)
    #: `message`/`event` in file order (set by `load_cases`; else messages, then events)
    _order: tuple[Step, ...] = PrivateAttr(default=())

    def steps(self) -> list[CaseMessage]:
        """The case's messages and events in file order: the relay's order."""
        order = self._order or ("message",) * len(self.message) + ("event",) * len(self.event)
        sources = {"message": iter(self.message), "event": iter(self.event)}
        return [next(sources[step]) for step in order]


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
    orders = _file_orders(path.read_text(encoding="utf-8"))
    for index, case in enumerate(cases):
        order = orders[index] if index < len(orders) else ()
        if sorted(order) != sorted(["message"] * len(case.message) + ["event"] * len(case.event)):
            raise_if_any(
                [
                    ConfigError(
                        shown, f"case[{index}]", "cannot tell its messages' and events' order"
                    )
                ]
            )
        case._order = order
    names = [case.name for case in cases]
    raise_if_any(
        [
            ConfigError(shown, f"case[{index}].name", f'duplicate case name "{name}"')
            for index, name in enumerate(names)
            if name in names[:index]
        ]
    )
    return cases


def _file_orders(text: str) -> list[tuple[Step, ...]]:
    """Per `[[case]]`, its `[[case.message]]` and `[[case.event]]` headers in file order (TOML
    keeps each array apart; the relay's order is the file's)."""
    orders: list[list[Step]] = []
    for match in _STEP_HEADER.finditer(text):
        step = match.group(1)
        if step is None:
            orders.append([])
        elif orders:
            orders[-1].append("message" if step == "message" else "event")
    return [tuple(order) for order in orders]


def fake_pubkey(key: str) -> str:
    """A stable 64-hex pubkey per identity key (cases need distinct, not real, keys)."""
    return hashlib.sha256(f"verifier-case:{key}".encode()).hexdigest()


class CaseWorld:
    """The identities, directory and opening messages every case of one task shares."""

    def __init__(self, task: Task) -> None:
        fixture = task.fixture
        self.task = task
        self.user_name = fixture.user_display_name or PINNED_USER_NAME
        self.pubkeys = {
            USER_ACTOR: fake_pubkey(USER_ACTOR),
            AGENT: fake_pubkey(AGENT_ID),
            FRESH_KEY: fake_pubkey(FRESH_KEY),
        }
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

    def names(self) -> dict[str, str]:
        """Display name -> who (`user`, `agent` or an identity id), as `@Name` writes them."""
        named = {self.user_name: USER_ACTOR, AGENT_ID: AGENT}
        return named | {str(row["name"]): str(row["identity_id"]) for row in self.directory}

    def pubkey(self, who: str) -> str:
        """`agent`, `user`, `fresh-key`, an identity id, or a raw pubkey taken as written."""
        return self.pubkeys.get(who, who)

    def evidence(self, case: Case) -> dict[str, Any]:
        events: list[dict[str, Any]] = []

        def post(author: str, content: str, event_id: str, **how: Any) -> None:
            channel = how.get("channel")
            kind = how.get("kind", Kind.MESSAGE)
            # a message always lands in a channel (the trial's by default); another event
            # only in the one it names
            tags = [["h", channel or CHANNEL_ID]] if kind == Kind.MESSAGE or channel else []
            if how.get("reply_to") is not None:
                tags.append(["e", how["reply_to"], "", "reply"])
            tags += [["p", self.pubkey(who)] for who in how.get("mention", ())]
            events.append(
                {
                    "id": event_id,
                    "pubkey": self.pubkey(author),
                    "created_at": FIRST_SECOND + len(events),
                    "kind": int(kind),
                    "tags": tags + [list(tag) for tag in how.get("tags", ())],
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
        for index, written in enumerate(case.steps()):
            what = "event" if isinstance(written, CaseEvent) else "message"
            post(
                written.author,
                written.content,
                written.id or f"case-{what}-{index + 1}",
                reply_to=written.reply_to,
                mention=written.mention,
                channel=written.channel,
                kind=written.kind,
                tags=written.tags,
            )
        identities = {
            self.user_name: {"role": "user", "pubkey": self.pubkeys[USER_ACTOR]},
            AGENT_ID: {"role": "orchestrator", "pubkey": self.pubkeys[AGENT]},
        }
        whole = build_trace(
            events, trial_channel_id=CHANNEL_ID, identities=identities, directory=self.directory
        )
        files = [
            agent_file_entry(AGENT_ID, file.path, data, len(data))
            for file in case.file
            for data in [file.content.encode("utf-8")]
        ]
        evidence = build_evidence(
            run_id="verifier-cases",
            trial_id=case.name,
            channel_id=CHANNEL_ID,
            task_name=self.task.short_name,
            task_event_id=TASK_EVENT_ID,
            completion_message_id=None,
            identities=identities,
            directory=self.directory,
            scripted_events=scripted,
            observed_channels=[],
            raw_events=events,
            channel_members=self.channel_members,
            agent_memory=self.agent_memory,
            trace=whole.trace,
            relay_events=whole.relay_events,
            relay_events_scope="database",  # a case lists every event the relay stored
            agent_files=ordered_agent_files(files),
        )
        evidence.update(case.evidence)
        return evidence
