"""The state one trial carries through its steps (orchestrator.md §7.2)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from orchestra.config.manifest import AgentSlot
from orchestra.config.task import Task
from orchestra.nostr.keys import Keys
from orchestra.paths import TrialPaths, make_trial_name
from orchestra.trial.clients import ClientPool
from orchestra.trial.completion import Completion, CompletionWatch
from orchestra.trial.context import JobContext
from orchestra.trial.environment import AgentProcess, TrialEnvironment
from orchestra.trial.eventlog import EventLogFollower
from orchestra.trial.identities import Identity
from orchestra.trial.observer import ChannelObserver
from orchestra.trial.record import TrialRecorder, base_record, trial_config


class TrialBase:
    """Identities, channel, agents and records of one trial; the step classes build on it."""

    def __init__(self, ctx: JobContext, task: Task, attempt: int) -> None:
        self.ctx = ctx
        self.task = task
        self.attempt = attempt
        self.trial_id = str(uuid.uuid4())
        self.name = make_trial_name(task.short_name)
        self.paths = TrialPaths((ctx.job_paths.root / self.name).absolute())
        self.manifest = ctx.condition.manifest
        self.slots: list[AgentSlot] = self.manifest.agent_slots()
        self.orchestrator_id = self.slots[0].agent_id
        self.agent_keys: dict[str, Keys] = {}
        self.user: Identity | None = None
        self.directory: list[tuple[Any, Identity]] = []
        self.environment: TrialEnvironment = ctx.make_environment(self.paths, task, self.trial_id)
        self.channel_id: str | None = None
        self.task_event_id: str | None = None
        self.scripted: list[dict[str, Any]] = []
        self.completion: Completion | None = None
        self.agents: dict[str, AgentProcess] = {}
        self.followers: dict[str, EventLogFollower] = {}
        self.follow_tasks: list[asyncio.Task[None]] = []
        self.observer: ChannelObserver | None = None
        self.watch: CompletionWatch | None = None
        self.trial_clients = ClientPool(ctx.stack.relay_ws_url)
        self.oracle_registered = False
        self.cancelled = False
        self._log_changed = asyncio.Event()
        self.recorder = TrialRecorder(self.paths, self._base_record(), ctx.on_trial_update)

    # --- records ------------------------------------------------------------------------

    @property
    def timeouts(self) -> tuple[float, float]:
        multiplier = self.ctx.options.timeout_multiplier
        agent = min(
            float(self.manifest.trial_budget.timeout_seconds),
            self.task.toml.agent.timeout_sec * multiplier,
        )
        return agent, self.task.toml.verifier.timeout_sec * multiplier

    def _base_record(self) -> dict[str, Any]:
        return base_record(self.ctx, self.task, self.trial_id, self.name, self.attempt)

    def _trial_config(self) -> dict[str, Any]:
        agent_seconds, verifier_seconds = self.timeouts
        return trial_config(
            self._base_record(),
            self.ctx,
            self.task,
            self.slots,
            timeouts={"agent_seconds": agent_seconds, "verifier_seconds": verifier_seconds},
        )

    @property
    def buzz(self) -> dict[str, Any]:
        return self.recorder.result["buzz"]

    def _user_client(self) -> Any:
        assert self.user is not None
        return self.ctx.stable_clients.client(self.user.keys)

    def _agent_client(self, agent_id: str) -> Any:
        return self.trial_clients.client(self.agent_keys[agent_id])

    def _notify(self) -> None:
        if self.watch is not None:
            self.watch.notify()

    def _notify_log(self) -> None:
        self._log_changed.set()
        self._notify()

    def _describe_exit(self, agent: AgentProcess) -> str:
        return (
            f"agent {agent.agent_id} exited with code {agent.exit_code}; see "
            f"{self.paths.stderr_log(agent.agent_id)} and {self.paths.events_log(agent.agent_id)}"
        )
