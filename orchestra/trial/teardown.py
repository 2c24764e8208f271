"""The teardown phase (orchestrator.md §7.2 steps 15-17): let turns in flight end, stop every
process, collect the logs."""

from __future__ import annotations

import asyncio
import json

from orchestra.documents.enums import StopReason
from orchestra.trial.context import JobContext
from orchestra.trial.state import TrialState
from orchestra.trial.trajectories import trajectory_sources, write_trajectories

USAGE_SETTLE_SECONDS = 30.0
#: Stops that leave agents mid-turn; after every other (a rule held) the turns are settled.
UNSETTLED_STOP_REASONS = (StopReason.TIMEOUT, StopReason.AGENT_BUDGET, StopReason.TRIAL_BUDGET)


async def settle_usage(state: TrialState) -> None:
    """Step 15: after a normal stop, wait for turns still in flight so their final usage is
    recorded (skipped after a timeout, a budget stop or an error)."""
    watch, completion = state.agent_phase.watch, state.agent_phase.completion
    if (
        watch is not None
        and completion is not None
        and completion.stop_reason not in UNSETTLED_STOP_REASONS
    ):
        await watch.wait_turns_end(USAGE_SETTLE_SECONDS)


async def stop_and_collect(state: TrialState, ctx: JobContext) -> None:
    """Steps 16-17: stop every process, cut the network, collect logs and assemble the
    agents' trajectories from them; never interrupted."""
    log, setup = state.recorder.log, state.setup
    for note in await state.env.stop_agents(ctx.hurry):
        log(note)
    for note in await state.env.isolate():
        log(note)
    for note in await fixture_file_changes(state):
        log(note)
    if setup.oracle_registered and ctx.oracle.server is not None:
        ctx.oracle.server.unregister(state.trial_id)
    try:
        await state.env.get_tree(state.env.facts.paths.runtime_logs_dir, state.paths.buzz_dir)
    except Exception as error:  # best effort (§7.2 step 17)
        log(f"collecting logs failed: {type(error).__name__}: {error}")
    for task in setup.follow_tasks:
        task.cancel()
    await asyncio.gather(*setup.follow_tasks, return_exceptions=True)
    for follower in setup.followers.values():
        for record in follower.state.notes:
            log(f"{follower.path.name}: {json.dumps(record, sort_keys=True)}")
    if setup.observer is not None:
        await setup.observer.close()
    if setup.capture is not None:
        await setup.capture.close()
    sources = trajectory_sources(state.slots, ctx.condition.manifest.prices)
    try:
        state.teardown.trajectories, notes = await asyncio.to_thread(
            write_trajectories, state.paths, state.trial_id, sources
        )
    except Exception as error:  # best effort, as log collection: the trial's outcome stands
        log(f"writing trajectories failed: {type(error).__name__}: {error}")
    else:
        for note in notes:
            log(note)


async def fixture_file_changes(state: TrialState) -> list[str]:
    """Fixture files the agents changed, for the record: the verifier reads the orchestrator's
    own rendered copies whatever happened to these (§9)."""
    notes = []
    for rendered in state.setup.fixture_files:
        path = state.env.facts.paths.fixture_file(rendered.spec.path)
        try:
            found = await state.env.read_file(path, len(rendered.content))
        except Exception as error:  # a record, never a reason to stop the teardown
            notes.append(f"fixture file {rendered.spec.path}: cannot read it back: {error}")
            continue
        if found != rendered.content:
            notes.append(
                f"fixture file {rendered.spec.path} was changed by the agents "
                "(the verifier gets the orchestrator's copy)"
            )
    return notes
