"""Completion detection for the agent phase (orchestrator.md §7.11-§7.13)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestra.paths import TrialPaths
from orchestra.stack.watch import StackUnavailable
from orchestra.trial.env.protocol import AgentProcess
from orchestra.trial.eventlog import AgentLogState
from orchestra.trial.observer import ChannelObserver

SETTLE_SECONDS = 3.0
DONE_PREFIX = "DONE:"


class AgentProcessExited(Exception):
    pass


def describe_exit(paths: TrialPaths, agent: AgentProcess) -> str:
    """The `AgentProcessExited` message: the agent, its exit code, where to look (§7.7)."""
    return (
        f"agent {agent.agent_id} exited with code {agent.exit_code}; see "
        f"{paths.stderr_log(agent.agent_id)} and {paths.events_log(agent.agent_id)}"
    )


@dataclass(frozen=True)
class Completion:
    stop_reason: str
    completion_message_id: str | None
    budget_exceeded: dict[str, Any] | None = None


@dataclass(frozen=True)
class CompletionRules:
    orchestrator_id: str
    orchestrator_pubkey: str
    solo: bool
    scripted_event_ids: Sequence[str]

    @property
    def done_message_applies(self) -> bool:
        return not self.solo or not self.scripted_event_ids


class CompletionWatch:
    """Re-evaluates the rules whenever an event log, the channel or a process changes."""

    def __init__(
        self,
        rules: CompletionRules,
        observer: ChannelObserver,
        states: Mapping[str, AgentLogState],
        agents: Mapping[str, AgentProcess],
        budget_check: Callable[[], dict[str, Any] | None],
        describe_exit: Callable[[AgentProcess], str],
        changed: asyncio.Event | None = None,
    ) -> None:
        """`changed`: set by whoever sees an event log, the channel or a process change."""
        self.rules = rules
        self.observer = observer
        self.states = states
        self.agents = agents
        self.budget_check = budget_check
        self.describe_exit = describe_exit
        self.changed = changed if changed is not None else asyncio.Event()

    def notify(self) -> None:
        self.changed.set()

    def _last_authored(self) -> str | None:
        authored = self.observer.authored_by(self.rules.orchestrator_pubkey)
        return authored[-1]["id"] if authored else None

    def _done_message(self) -> str | None:
        for event in self.observer.authored_by(self.rules.orchestrator_pubkey):
            content = event.get("content")
            if isinstance(content, str) and content.startswith(DONE_PREFIX):
                done_id: str = event["id"]
                return done_id
        return None

    def _solo_settled_condition(self) -> bool:
        state = self.states[self.rules.orchestrator_id]
        if state.ends < 1 or state.in_flight != 0 or state.pending:
            return False
        return all(event_id in state.delivered for event_id in self.rules.scripted_event_ids)

    def _activity_signature(self) -> tuple[int, ...]:
        return tuple(
            number
            for state in self.states.values()
            for number in (state.starts, state.ends, len(state.queued))
        )

    def check_failures(self) -> None:
        for agent in self.agents.values():
            if agent.exit_code is not None and not agent.stopping:
                raise AgentProcessExited(self.describe_exit(agent))
        if self.observer.failure is not None:
            raise StackUnavailable(self.observer.failure)

    async def wait(self, timeout_seconds: float) -> Completion:
        deadline = time.monotonic() + timeout_seconds
        settled_since: float | None = None
        settled_signature: tuple[int, ...] = ()
        while True:
            self.changed.clear()
            self.check_failures()
            exceeded = self.budget_check()
            if exceeded is not None:
                return Completion(f"{exceeded['scope']}_budget", None, exceeded)
            if self.rules.done_message_applies:
                done_id = self._done_message()
                if done_id is not None:
                    return Completion("done_message", done_id)
            now = time.monotonic()
            signature = self._activity_signature()
            if self.rules.solo and self._solo_settled_condition():
                # any turn or queued event in between restarts the window, even when a whole
                # turn happened between two evaluations
                if settled_since is None or signature != settled_signature:
                    settled_since, settled_signature = now, signature
                if now - settled_since >= SETTLE_SECONDS:
                    return Completion("turn_end", self._last_authored())
            else:
                settled_since = None
            if now >= deadline:
                return Completion("timeout", None)
            wake_at = (
                deadline if settled_since is None else min(deadline, settled_since + SETTLE_SECONDS)
            )
            try:
                await asyncio.wait_for(self.changed.wait(), max(0.0, wake_at - now))
            except TimeoutError:
                pass

    async def wait_turns_end(self, timeout_seconds: float) -> None:
        """Usage settle (§7.2 step 15): let in-flight turns finish so final usage is logged."""
        deadline = time.monotonic() + timeout_seconds
        while any(state.in_flight > 0 for state in self.states.values()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                return
