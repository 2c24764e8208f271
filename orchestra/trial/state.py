"""What one trial knows while it runs (orchestrator.md §7.2); its `result.json` is written
from this state (orchestra.trial.record), never the other way round."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from orchestra.config.fixture import DirectoryEntry
from orchestra.config.manifest import AgentSlot
from orchestra.config.task import Task
from orchestra.documents.trial import RetriedAttempt, TrialIdentity
from orchestra.nostr.keys import Keys
from orchestra.paths import TrialPaths, make_trial_name
from orchestra.stack.watch import HealthySpell
from orchestra.trial.accounting import TrialAccounting
from orchestra.trial.completion import Completion, CompletionWatch
from orchestra.trial.context import JobContext
from orchestra.trial.env.protocol import AgentProcess, TrialEnvironment
from orchestra.trial.eventlog import AgentLogState, EventLogFollower
from orchestra.trial.fixture_files import RenderedFile
from orchestra.trial.identities import Identity
from orchestra.trial.observer import ChannelObserver
from orchestra.trial.record import TrialRecorder, trial_identity
from orchestra.trial.relay_ops import ClientPool


@dataclass(frozen=True)
class Timeouts:
    agent_seconds: float  # the effective agent timeout (§7.1)
    verifier_seconds: float


@dataclass(frozen=True)
class TrialNaming:
    """A trial's id and directory name (§10.1), chosen once for the trial."""

    trial_id: str
    name: str

    @classmethod
    def fresh(cls, task: Task) -> TrialNaming:
        return cls(str(uuid.uuid4()), make_trial_name(task.short_name))

    def __iter__(self) -> Iterator[str]:
        return iter((self.trial_id, self.name))


@dataclass
class TrialState:
    # --- step 1: fixed for the whole trial -------------------------------------------------
    task: Task
    attempt: int
    trial_id: str
    name: str
    paths: TrialPaths
    slots: list[AgentSlot]
    timeouts: Timeouts
    env: TrialEnvironment
    recorder: TrialRecorder
    trial_clients: ClientPool  # the fresh agent identities' clients, closed at finalize
    identity: TrialIdentity  # the keys config.json and result.json share
    #: the stack's current spell of health: once it ends, the trial cannot use the stack
    outage: HealthySpell
    # --- step 2: identities ----------------------------------------------------------------
    agent_keys: dict[str, Keys] = field(default_factory=dict)
    user: Identity | None = None
    directory: list[tuple[DirectoryEntry, Identity]] = field(default_factory=list)
    # --- step 3: the fixture's files as rendered: the verifier's pristine copies ------------
    fixture_files: list[RenderedFile] = field(default_factory=list)
    # --- steps 4-12: the trial channel -------------------------------------------------------
    channel_id: str | None = None
    channel_name: str | None = None
    observer: ChannelObserver | None = None
    task_event_id: str | None = None
    scripted_events: list[dict[str, Any]] = field(default_factory=list)
    # --- steps 9-10: agents ------------------------------------------------------------------
    oracle_registered: bool = False
    agents: dict[str, AgentProcess] = field(default_factory=dict)
    followers: dict[str, EventLogFollower] = field(default_factory=dict)
    follow_tasks: list[asyncio.Task[None]] = field(default_factory=list)
    #: set whenever an event log, the channel or an agent process changed
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    # --- steps 13-21: the outcome --------------------------------------------------------------
    watch: CompletionWatch | None = None
    completion: Completion | None = None
    evidence_exported: bool = False
    evidence: bytes | None = None  # the exported evidence file's bytes (§8.5)
    #: author pubkey -> messages in the exported transcript (None: no evidence exported)
    authored: dict[str, int] | None = None
    verifier_inputs: dict[str, Any] | None = None  # the result.json record of what was judged
    verifier: dict[str, Any] | None = None  # the result.json `verifier` summary
    rewards: dict[str, float] | None = None
    reward: float | None = None  # set only when the verifier produced a valid reward
    accounting: TrialAccounting | None = None
    trajectories: dict[str, str] = field(default_factory=dict)  # agent id -> trial-relative path
    agent_active_seconds: float = 0.0
    secret_scan: dict[str, Any] = field(default_factory=lambda: {"redactions": 0, "files": []})
    exception_info: dict[str, str] | None = None
    cancelled_in: str | None = None  # the phase a cancellation interrupted (§7.6)
    retried_from: list[RetriedAttempt] = field(default_factory=list)  # earlier attempts rerun

    @classmethod
    def new(
        cls, ctx: JobContext, task: Task, attempt: int, named: TrialNaming | None = None
    ) -> TrialState:
        """Its directory's paths and its environment (unstarted); a fresh trial id and name
        unless the caller chose them (`named`: a Ray node host runs the driver's trial)."""
        trial_id, name = named or TrialNaming.fresh(task)
        paths = TrialPaths((ctx.job_paths.root / name).absolute())
        multiplier = ctx.options.timeout_multiplier
        manifest = ctx.condition.manifest
        timeouts = Timeouts(
            agent_seconds=min(
                float(manifest.trial_budget.timeout_seconds),
                task.toml.agent.timeout_sec * multiplier,
            ),
            verifier_seconds=task.toml.verifier.timeout_sec * multiplier,
        )
        return cls(
            task=task,
            attempt=attempt,
            trial_id=trial_id,
            name=name,
            paths=paths,
            slots=manifest.agent_slots(),
            timeouts=timeouts,
            env=ctx.environments.environment(paths, task, trial_id),
            recorder=TrialRecorder(paths, ctx.on_trial_update),
            trial_clients=ClientPool(ctx.stack.relay_ws_url),
            identity=trial_identity(ctx, task, trial_id, name, attempt),
            outage=ctx.watch.current,
        )

    @property
    def orchestrator_id(self) -> str:
        return self.slots[0].agent_id

    @property
    def failed(self) -> bool:
        return self.exception_info is not None

    @property
    def cancelled(self) -> bool:
        return self.cancelled_in is not None

    def mark_cancelled(self) -> None:
        """Interrupted (SIGINT/SIGTERM): the trial goes on to stop and finalize only."""
        if self.cancelled_in is None:
            self.cancelled_in = self.recorder.phase

    def log_states(self) -> dict[str, AgentLogState]:
        """What each agent's ACP event log says so far (§7.10)."""
        return {agent_id: follower.state for agent_id, follower in self.followers.items()}

    def notify(self) -> None:
        self.changed.set()

    def user_client(self, ctx: JobContext) -> Any:
        assert self.user is not None, "identities are minted first (step 2)"
        return ctx.stable_clients.client(self.user.keys)

    def agent_client(self, agent_id: str) -> Any:
        return self.trial_clients.client(self.agent_keys[agent_id])
