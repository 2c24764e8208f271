"""One trial, top to bottom (orchestrator.md §7.2).

Errors skip the remaining work steps but never stop, log collection or finalize; a
cancellation (§7.6) jumps to stopping, and stopping and finalizing cannot be interrupted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

from orchestra.config.task import Task
from orchestra.documents.enums import Phase
from orchestra.documents.trial import RetriedAttempt, TrialResult
from orchestra.stack.watch import during
from orchestra.trial.agent_phase import run_agent_phase
from orchestra.trial.context import JobContext
from orchestra.trial.errors import uncancel
from orchestra.trial.finalize import finalize
from orchestra.trial.grading import grade
from orchestra.trial.provider import record_provider_failure
from orchestra.trial.record import enter_phase, record_failure, result_document, write_trial_config
from orchestra.trial.setup_phase import set_up
from orchestra.trial.state import TrialNaming, TrialState
from orchestra.trial.teardown import settle_usage, stop_and_collect


async def run_trial(
    ctx: JobContext,
    task: Task,
    attempt: int,
    retried_from: Sequence[RetriedAttempt] = (),
    named: TrialNaming | None = None,
) -> TrialResult:
    """Steps 1-21; the result is always written. Raises only when the trial's directory
    cannot be created. `retried_from`: the earlier attempts at this slot that this one reruns;
    `named`: the trial's id and name when the caller chose them (else fresh ones)."""
    state = TrialState.new(ctx, task, attempt, named)
    state.retried_from = list(retried_from)
    write_trial_config(state, ctx)  # step 1
    enter_phase(state, Phase.SETUP)
    # steps that use the stack fail `StackUnavailable` the moment it goes down (§5.1)
    if await work(state, during(state.outage, set_up(state, ctx))):  # steps 2-10, 300 s
        enter_phase(state, Phase.AGENT)
        await work(state, during(state.outage, run_agent_phase(state, ctx)))  # steps 11-14
    enter_phase(state, Phase.TEARDOWN)
    if not state.cancelled and not state.failed:
        await work(state, during(state.outage, settle_usage(state)))  # step 15
    await uninterruptible(state, stop_and_collect(state, ctx))  # steps 16-17
    if not state.cancelled and not state.failed:
        await work(state, grade(state, ctx))  # steps 18-19
    if not state.cancelled:
        record_provider_failure(state, ctx)
    await uninterruptible(state, finalize(state, ctx))  # steps 20-21
    return result_document(state)


async def work(state: TrialState, step: Coroutine[Any, Any, None]) -> bool:
    """Run a work step; True when it completed. An error is recorded, a cancellation marks
    the trial cancelled; either way the trial goes on to stop and finalize."""
    try:
        await step
    except asyncio.CancelledError:
        state.mark_cancelled()
        uncancel()
    except Exception as error:
        record_failure(state, error)
    else:
        return True
    return False


async def uninterruptible(state: TrialState, step: Coroutine[Any, Any, None]) -> None:
    """Stopping and finalizing must complete: a cancellation only marks the trial."""
    task = asyncio.ensure_future(step)
    while True:
        try:
            await asyncio.shield(task)
            return
        except asyncio.CancelledError:
            if task.done():
                raise
            state.mark_cancelled()
            uncancel()
