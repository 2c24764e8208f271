"""The agent phase (orchestrator.md §7.2 steps 11-14): post the task and the scripted
messages, then wait for completion under the agent timeout and the budgets (§7.11-§7.13)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from orchestra.documents.enums import ErrorType
from orchestra.documents.trial import BudgetExceeded, ScriptedEvent
from orchestra.trial import relay_ops
from orchestra.trial.budget import budget_exceeded, trial_cost
from orchestra.trial.completion import (
    CompletionRules,
    CompletionWatch,
    describe_exit,
    describe_unaccounted,
)
from orchestra.trial.context import JobContext
from orchestra.trial.errors import TrialError, classified
from orchestra.trial.record import write_result
from orchestra.trial.state import TrialState
from orchestra.trial.watchdog import watch_liveness


async def run_agent_phase(state: TrialState, ctx: JobContext) -> None:
    setup, phase = state.setup, state.agent_phase
    assert setup.channel_id is not None and setup.observer is not None
    orchestrator_pubkey = setup.agent_keys[state.orchestrator_id].pubkey
    accepted_at = await post_task(state, ctx, orchestrator_pubkey)
    scripted = ScriptedPosting(len(state.task.fixture.scripted_messages))
    phase.watch = watch = CompletionWatch(
        CompletionRules(
            orchestrator_id=state.orchestrator_id,
            orchestrator_pubkey=orchestrator_pubkey,
            solo=ctx.condition.manifest.is_solo,
            scripted_event_ids=scripted.posted,
            awaited_event_ids=scripted.awaited,
            settle_seconds=ctx.options.settle_ms / 1000,
        ),
        setup.observer,
        state.log_states(),
        setup.agents,
        lambda: check_usage(state, ctx),
        lambda agent: describe_exit(state.paths, agent),
        state.changed,
        scripted_pending=scripted.pending,
    )
    remaining = state.timeouts.agent_seconds - (time.monotonic() - accepted_at)
    try:
        async with asyncio.TaskGroup() as group:
            posting = group.create_task(
                post_scripted_messages(state, ctx, orchestrator_pubkey, scripted, accepted_at)
            )
            watchdog = group.create_task(watch_liveness(state, ctx))
            phase.completion = completion = await watch.wait(remaining)
            posting.cancel()  # a timeout or a budget stop ends the trial before a late post
            watchdog.cancel()
    except BaseExceptionGroup as failed:  # one task's own error, as if it ran alone
        # an agent that exited first is `AgentProcessExited`, the trial's failure as it is
        raise failed.exceptions[0] from None
    if completion.unaccounted_events:
        state.recorder.log(describe_unaccounted(completion.unaccounted_events))
    state.recorder.log(f"agent phase ended: {completion.stop_reason}")


def check_usage(state: TrialState, ctx: JobContext) -> BudgetExceeded | None:
    """On every usage change: report the trial's live cost to the job (its cost cap), then
    check the budgets (§7.13)."""
    manifest, states = ctx.condition.manifest, state.log_states()
    ctx.on_live_cost(state.name, trial_cost(manifest, state.slots, states))
    return budget_exceeded(manifest, state.slots, states)


async def post_task(state: TrialState, ctx: JobContext, orchestrator_pubkey: str) -> float:
    """Step 11: the task message as the trial user; returns when the relay accepted it (the
    budget clock starts then)."""
    channel_id = state.setup.channel_id
    assert channel_id is not None
    content = f"@{state.orchestrator_id} {state.task.instruction()}"
    with classified(ErrorType.TASK_POST_ERROR):
        event_id = await relay_ops.send_message(
            state.user_client(ctx), channel_id, content, mention=[orchestrator_pubkey]
        )
    if event_id is None:
        raise TrialError(ErrorType.TASK_POST_ERROR, "the task message returned no event id")
    accepted_at = time.monotonic()
    state.agent_phase.task_event_id = event_id
    if state.setup.oracle_registered and ctx.oracle.server is not None:
        ctx.oracle.server.set_task_event(state.trial_id, event_id)
    write_result(state)
    return accepted_at


@dataclass
class ScriptedPosting:
    """The scripted messages posted so far (§7.2 step 12): their ids, and those the solo
    delivery rule waits for, the ones that `p`-tag the orchestrator agent (the events
    `buzz-acp` wakes on); any other counts as delivered once posted (§7.11)."""

    total: int
    posted: list[str] = field(default_factory=list)
    awaited: list[str] = field(default_factory=list)

    def pending(self) -> bool:
        return len(self.posted) < self.total


async def post_scripted_messages(
    state: TrialState,
    ctx: JobContext,
    orchestrator_pubkey: str,
    progress: ScriptedPosting,
    accepted_at: float,
) -> None:
    """Step 12: the fixture's scripted messages in fixture order, each `delay_seconds` after
    the task's acceptance (`accepted_at`, monotonic) and never before the one before it."""
    channel_id, user = state.setup.channel_id, state.setup.user
    assert channel_id is not None and user is not None
    actors = {entry.key: identity for entry, identity in state.setup.directory}
    posted = state.agent_phase.scripted_events
    for message in state.task.fixture.scripted_messages:
        wait = accepted_at + message.delay_seconds - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)  # the fixture's own timing, not a synchronisation
        actor = user if message.actor == "user" else actors[message.actor]
        reply_to = state.agent_phase.task_event_id if message.reply_to_task else None
        with classified(ErrorType.SCRIPTED_EVENT_ERROR):
            event_id, tagged = await relay_ops.send_tagged_message(
                ctx.stable_clients.client(actor.keys),
                channel_id,
                message.render(state.orchestrator_id, user.name),
                mention=[orchestrator_pubkey] if message.mention_orchestrator else None,
                reply_to=reply_to,
            )
        if event_id is None:
            raise TrialError(
                ErrorType.SCRIPTED_EVENT_ERROR,
                f'scripted event "{message.label}" did not return an event ID',
            )
        if orchestrator_pubkey in tagged:
            progress.awaited.append(event_id)
        posted.append(
            ScriptedEvent(
                label=message.label,
                event_id=event_id,
                actor=message.actor,
                reply_to_event_id=reply_to,
            )
        )
        progress.posted.append(event_id)
        state.notify()
