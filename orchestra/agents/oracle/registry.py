"""Trial registrations held by the oracle server (orchestrator.md §4.5, "Registration").

Held in memory only. The per-agent request counter is the only server-side state the
decision depends on (for fault plans and ids).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchestra.agents.oracle.faults import FaultPlan

DoneProbe = Callable[[], Awaitable[bool]]


class OracleRegistrationError(RuntimeError):
    """A registration was refused (e.g. a token already held by another live trial)."""


def oracle_token(trial_id: str, agent_id: str) -> str:
    """The per-agent bearer token `oracle-<trial id first 8>-<agent id>`."""
    return f"oracle-{trial_id[:8]}-{agent_id}"


class OracleAgent(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    agent_id: str
    faults: FaultPlan = FaultPlan()


class OracleTeammate(BaseModel):
    """One agent of the trial's roster, as the team protocol addresses it."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    agent_id: str
    kind: Literal["orchestrator", "worker"]
    pubkey: str


class OracleTrial(BaseModel):
    """What a trial registers before its agents start.

    `done_probe` replaces the host-path check of `<state_dir>/done` (the docker env
    runs `test -e` in the trial container); `task_event_id` may be set later. `team` is the
    whole roster in agent order (every agent, oracle-served or not); with fewer than two agents
    the oracle follows the solo protocol.
    """

    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, arbitrary_types_allowed=True
    )

    trial_id: str
    channel_id: str
    requester_pubkey: str
    requester_name: str
    solve_path: str
    state_dir: str
    agents: dict[str, OracleAgent]
    log_path: Path
    task_event_id: str | None = None
    done_probe: DoneProbe | None = None
    team: tuple[OracleTeammate, ...] = ()

    def teammate(self, agent_id: str) -> OracleTeammate | None:
        return next((m for m in self.team if m.agent_id == agent_id), None)


@dataclass
class TrialState:
    """A live registration plus its mutable parts."""

    trial: OracleTrial
    registered_at: int = field(default_factory=lambda: int(time.time()))
    task_event_id: str | None = None
    task_posted: asyncio.Event = field(default_factory=asyncio.Event)
    request_numbers: dict[str, int] = field(default_factory=dict)

    def set_task_event(self, event_id: str) -> None:
        self.task_event_id = event_id
        self.task_posted.set()

    def next_request_number(self, agent_id: str) -> int:
        number = self.request_numbers.get(agent_id, 0) + 1
        self.request_numbers[agent_id] = number
        return number

    async def wait_for_task_event(self, timeout_s: float) -> str | None:
        if self.task_event_id is None:
            try:
                async with asyncio.timeout(timeout_s):
                    await self.task_posted.wait()
            except TimeoutError:
                return None
        return self.task_event_id

    async def solve_finished(self) -> bool:
        if self.trial.done_probe is not None:
            return await self.trial.done_probe()
        return (Path(self.trial.state_dir) / "done").exists()


class Registry:
    """Maps bearer tokens to (trial, agent)."""

    def __init__(self) -> None:
        self._trials: dict[str, TrialState] = {}
        self._tokens: dict[str, tuple[TrialState, OracleAgent]] = {}

    def register(self, trial: OracleTrial) -> TrialState:
        if trial.trial_id in self._trials:
            raise OracleRegistrationError(f"trial {trial.trial_id} is already registered")
        taken = sorted(token for token in trial.agents if token in self._tokens)
        if taken:
            raise OracleRegistrationError(
                f"oracle token already registered by another live trial: {taken[0]}"
            )
        state = TrialState(trial=trial)
        if trial.task_event_id is not None:
            state.set_task_event(trial.task_event_id)
        self._trials[trial.trial_id] = state
        for token, agent in trial.agents.items():
            self._tokens[token] = (state, agent)
        return state

    def unregister(self, trial_id: str) -> None:
        state = self._trials.pop(trial_id, None)
        if state is None:
            return
        for token in state.trial.agents:
            self._tokens.pop(token, None)

    def get_trial(self, trial_id: str) -> TrialState:
        try:
            return self._trials[trial_id]
        except KeyError:
            raise OracleRegistrationError(f"trial {trial_id} is not registered") from None

    def lookup(self, token: str) -> tuple[TrialState, OracleAgent] | None:
        return self._tokens.get(token)
