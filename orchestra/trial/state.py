"""What one trial knows while it runs (orchestrator.md §7.2); its `result.json` is rendered
from this state (orchestra.trial.record), never the other way round.

Each phase owns one small state object and is the only writer of its fields: `SetupState`
(setup_phase), `AgentPhaseState` (agent_phase), `TeardownState` (teardown), `GradingState`
(grading), `FinalizeState` (finalize). What any phase may record (an error, a cancellation)
stays on `TrialState`. The values are the result documents' own typed parts and enums.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from orchestra.buzz import BuzzClient
from orchestra.config.fixture import DirectoryEntry
from orchestra.config.manifest import AgentSlot
from orchestra.config.task import Task
from orchestra.documents.enums import Flag, Phase
from orchestra.documents.trial import (
    ExceptionInfo,
    RetriedAttempt,
    ScriptedEvent,
    SecretScan,
    TrialIdentity,
    VerifierSummary,
)
from orchestra.documents.trial import VerifierInputs as VerifierInputsRecord
from orchestra.nostr.keys import Keys
from orchestra.paths import TrialPaths, make_trial_name
from orchestra.stack.watch import HealthySpell
from orchestra.trial.accounting import NO_ACCOUNTING, TrialAccounting
from orchestra.trial.capture import TrialCapture
from orchestra.trial.completion import Completion, CompletionWatch
from orchestra.trial.context import JobContext
from orchestra.trial.env.protocol import AgentProcess, TrialEnvironment
from orchestra.trial.eventlog import AgentLogState, EventLogFollower
from orchestra.trial.fixture_files import RenderedFile
from orchestra.trial.identities import Identity
from orchestra.trial.observer import ChannelObserver
from orchestra.trial.recorder import TrialRecorder
from orchestra.trial.relay_ops import ClientPool
from orchestra.trial.written_files import Snapshot


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
class SetupState:
    """Written by the setup phase (steps 2-10)."""

    # step 2: identities
    agent_keys: dict[str, Keys] = field(default_factory=dict)
    user: Identity | None = None
    directory: list[tuple[DirectoryEntry, Identity]] = field(default_factory=list)
    # step 3: the fixture's files as rendered: the verifier's pristine copies
    fixture_files: list[RenderedFile] = field(default_factory=list)
    # step 4: the trial channel
    channel_id: str | None = None
    channel_name: str | None = None
    observer: ChannelObserver | None = None
    capture: TrialCapture | None = None  # every event the trial's identities may read (§8.9)
    # step 9: agents, and their workspace and home as they were before (§8.10)
    files_before: Snapshot | None = None
    oracle_registered: bool = False
    agents: dict[str, AgentProcess] = field(default_factory=dict)
    followers: dict[str, EventLogFollower] = field(default_factory=dict)
    follow_tasks: list[asyncio.Task[None]] = field(default_factory=list)


@dataclass
class AgentPhaseState:
    """Written by the agent phase (steps 11-14)."""

    task_event_id: str | None = None
    scripted_events: list[ScriptedEvent] = field(default_factory=list)
    watch: CompletionWatch | None = None
    completion: Completion | None = None


@dataclass
class TeardownState:
    """Written by teardown (steps 15-17)."""

    trajectories: dict[str, str] = field(default_factory=dict)  # agent id -> trial-relative path


@dataclass
class GradingState:
    """Written by grading (steps 18-19); a provider failure voids `reward` afterwards."""

    evidence: bytes | None = None  # the exported evidence file's bytes (§8.5)
    #: author pubkey -> messages in the exported transcript (None: no evidence exported)
    authored: dict[str, int] | None = None
    verifier_inputs: VerifierInputsRecord | None = None  # what was judged
    verifier: VerifierSummary | None = None
    rewards: dict[str, float] | None = None
    reward: float | None = None  # set only when the verifier produced a valid reward

    @property
    def evidence_exported(self) -> bool:
        return self.evidence is not None


@dataclass
class FinalizeState:
    """Written by finalize (steps 20-21)."""

    accounting: TrialAccounting = NO_ACCOUNTING
    agent_active_seconds: float = 0.0
    secret_scan: SecretScan = field(default_factory=SecretScan)
    flags: list[Flag] = field(default_factory=list)  # the trial's liveness flags
    seat_flags: dict[str, list[Flag]] = field(default_factory=dict)  # agent id -> its flags


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
    retried_from: list[RetriedAttempt] = field(default_factory=list)  # earlier attempts rerun
    # --- one object per phase, written by that phase only ------------------------------------
    setup: SetupState = field(default_factory=SetupState)
    agent_phase: AgentPhaseState = field(default_factory=AgentPhaseState)
    teardown: TeardownState = field(default_factory=TeardownState)
    grading: GradingState = field(default_factory=GradingState)
    finalize: FinalizeState = field(default_factory=FinalizeState)
    # --- any phase ---------------------------------------------------------------------------
    exception_info: ExceptionInfo | None = None
    cancelled_in: Phase | None = None  # the phase a cancellation interrupted (§7.6)
    #: set whenever an event log, the channel or an agent process changed
    changed: asyncio.Event = field(default_factory=asyncio.Event)

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
        return {agent_id: follower.state for agent_id, follower in self.setup.followers.items()}

    def notify(self) -> None:
        self.changed.set()

    def user_client(self, ctx: JobContext) -> BuzzClient:
        assert self.setup.user is not None, "identities are minted first (step 2)"
        return ctx.stable_clients.client(self.setup.user.keys)

    def agent_client(self, agent_id: str) -> BuzzClient:
        return self.trial_clients.client(self.setup.agent_keys[agent_id])


def trial_identity(
    ctx: JobContext, task: Task, trial_id: str, name: str, attempt: int
) -> TrialIdentity:
    """The keys that identify a trial in both its config.json and its result.json."""
    return TrialIdentity(
        trial_id=trial_id,
        trial_name=name,
        job_name=ctx.job_name,
        task_name=task.name,
        short_name=task.short_name,
        layer=task.layer,
        attempt=attempt,
        condition=ctx.condition.name,
        manifest_sha256=ctx.condition.manifest_sha256,
    )
