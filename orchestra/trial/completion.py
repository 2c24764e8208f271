"""Completion detection for the agent phase (orchestrator.md §7.11-§7.13)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from orchestra.documents.enums import BudgetScope, StopReason
from orchestra.documents.trial import BudgetExceeded
from orchestra.errors import TrialFailure
from orchestra.paths import TrialPaths
from orchestra.processes import first_of
from orchestra.stack.watch import StackUnavailable
from orchestra.trial.env.protocol import AgentProcess
from orchestra.trial.eventlog import AgentLogState
from orchestra.trial.observer import ChannelObserver

#: a wake-eligible event still unaccounted for this long after the last turn ended is a harness
#: fault: recorded as `unaccounted_events`, and the solo stop proceeds (§7.11)
UNACCOUNTED_LIMIT_SECONDS = 10.0
DONE_PREFIX = "DONE:"
#: the stop reason of each budget's limit (§7.13)
BUDGET_STOPS = {
    BudgetScope.AGENT: StopReason.AGENT_BUDGET,
    BudgetScope.TRIAL: StopReason.TRIAL_BUDGET,
}


class AgentProcessExited(TrialFailure):
    """An agent process of the trial exited before it completed (§7.7)."""


def describe_exit(paths: TrialPaths, agent: AgentProcess) -> str:
    """The `AgentProcessExited` message: the agent, its exit code, where to look (§7.7)."""
    return (
        f"agent {agent.agent_id} exited with code {agent.exit_code}; see "
        f"{paths.stderr_log(agent.agent_id)} and {paths.events_log(agent.agent_id)}"
    )


def describe_unaccounted(event_ids: Sequence[str]) -> str:
    """The `trial.log` line of a stop that gave up waiting for wake-eligible events (§7.11)."""
    return (
        f"wake-eligible events still unaccounted for {UNACCOUNTED_LIMIT_SECONDS:g} s after the "
        f"last turn ended (the stop proceeds): {', '.join(event_ids)}"
    )


@dataclass(frozen=True)
class Completion:
    stop_reason: StopReason
    completion_message_id: str | None
    budget_exceeded: BudgetExceeded | None = None
    unaccounted_events: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompletionRules:
    """The two id lists grow while delayed scripted messages are posted (§7.2 step 12); no
    rule holds before the last of them is posted."""

    orchestrator_id: str
    orchestrator_pubkey: str
    solo: bool
    scripted_event_ids: Sequence[str]
    #: the scripted ids the solo delivery rule waits for: those that p-tag the orchestrator;
    #: the others count as delivered once posted
    awaited_event_ids: Sequence[str]
    settle_seconds: float  # the settle grace (`--settle-ms`)

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
        budget_check: Callable[[], BudgetExceeded | None],
        describe_exit: Callable[[AgentProcess], str],
        changed: asyncio.Event | None = None,
        scripted_pending: Callable[[], bool] = lambda: False,
    ) -> None:
        """`changed`: set by whoever sees an event log, the channel or a process change, or
        posts a scripted message; `scripted_pending`: some scripted message is still to be
        posted (§7.11: the trial does not end before it)."""
        self.rules = rules
        self.observer = observer
        self.states = states
        self.agents = agents
        self.budget_check = budget_check
        self.describe_exit = describe_exit
        self.changed = changed if changed is not None else asyncio.Event()
        self.scripted_pending = scripted_pending

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

    def _solo_quiet(self) -> bool:
        """The solo rules' conditions on the agent's own log: a turn ended, none in flight or
        waiting, every scripted event that wakes the agent delivered (§7.11)."""
        state = self.states[self.rules.orchestrator_id]
        if state.ends < 1 or state.in_flight != 0 or state.pending:
            return False
        return all(event_id in state.delivered for event_id in self.rules.awaited_event_ids)

    def _unaccounted(self) -> tuple[str, ...]:
        """Wake-eligible events the orchestrator agent's log does not account for yet."""
        state = self.states[self.rules.orchestrator_id]
        eligible = self.observer.wake_eligible(self.rules.orchestrator_pubkey)
        return tuple(event_id for event_id in eligible if not state.accounts_for(event_id))

    def _activity_signature(self) -> tuple[int, ...]:
        return (
            len(self.observer.events),
            *(
                number
                for state in self.states.values()
                for number in (
                    state.starts,
                    state.ends,
                    len(state.queued),
                    len(state.delivered),
                    len(state.discarded),
                )
            ),
        )

    def check_failures(self) -> None:
        for agent in self.agents.values():
            if agent.exit_code is not None and not agent.stopping:
                raise AgentProcessExited(self.describe_exit(agent))
        if self.observer.failure is not None:
            raise StackUnavailable(self.observer.failure)

    async def wait(self, timeout_seconds: float) -> Completion:
        deadline = time.monotonic() + timeout_seconds
        solo = _SoloClock(self.rules.settle_seconds)
        while True:
            self.changed.clear()
            self.check_failures()
            exceeded = self.budget_check()
            if exceeded is not None:
                return Completion(BUDGET_STOPS[exceeded.scope], None, exceeded)
            pending = self.scripted_pending()
            if self.rules.done_message_applies and not pending:
                done_id = self._done_message()
                if done_id is not None:
                    return Completion(StopReason.DONE_MESSAGE, done_id)
            now = time.monotonic()
            if self.rules.solo and not pending:
                state = self.states[self.rules.orchestrator_id]
                quiet = self._solo_quiet()
                unaccounted = self._unaccounted() if quiet else ()
                solo.observe(now, state.ends, quiet, unaccounted, self._activity_signature())
                stop = state.last_turn or StopReason.TURN_END
                if solo.settled(now):
                    return Completion(stop, self._last_authored())
                if solo.given_up(now):
                    return Completion(stop, self._last_authored(), None, unaccounted)
            if now >= deadline:
                return Completion(StopReason.TIMEOUT, None)
            wake_at = min(deadline, solo.next_deadline())
            await first_of(self.changed.wait(), None, max(0.0, wake_at - now))

    async def wait_turns_end(self, timeout_seconds: float) -> None:
        """Usage settle (§7.2 step 15): let in-flight turns finish so final usage is logged."""
        deadline = time.monotonic() + timeout_seconds
        while any(state.in_flight > 0 for state in self.states.values()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.changed.clear()
            if not await first_of(self.changed.wait(), None, remaining):
                return


class _SoloClock:
    """The two clocks of the solo rules (§7.11): the settle grace, which runs while everything
    is accounted for and nothing moves, and the limit on waiting for an event the log never
    accounts for, which runs from the last turn's end."""

    def __init__(self, settle_seconds: float) -> None:
        self.settle_seconds = settle_seconds
        self._ends = -1
        self._last_turn_end: float | None = None
        self._settled_since: float | None = None
        self._signature: tuple[int, ...] = ()
        self._waiting_for_accounts = False

    def observe(
        self,
        now: float,
        ends: int,
        quiet: bool,
        unaccounted: tuple[str, ...],
        signature: tuple[int, ...],
    ) -> None:
        if ends != self._ends:
            self._ends, self._last_turn_end = ends, now
        self._waiting_for_accounts = quiet and bool(unaccounted)
        if not quiet or unaccounted:
            self._settled_since = None
        elif self._settled_since is None or signature != self._signature:
            # anything seen or logged in between restarts the grace, even a whole turn that
            # happened between two evaluations
            self._settled_since = now
        self._signature = signature

    def settled(self, now: float) -> bool:
        return self._settled_since is not None and now - self._settled_since >= self.settle_seconds

    def given_up(self, now: float) -> bool:
        return self._waiting_for_accounts and now >= self._give_up_at()

    def _give_up_at(self) -> float:
        assert self._last_turn_end is not None
        return self._last_turn_end + UNACCOUNTED_LIMIT_SECONDS

    def next_deadline(self) -> float:
        """When the state may be decided without any further change: never, unless a clock
        runs."""
        if self._settled_since is not None:
            return self._settled_since + self.settle_seconds
        if self._waiting_for_accounts:
            return self._give_up_at()
        return float("inf")
