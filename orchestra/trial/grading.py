"""Grading (orchestrator.md §7.2 steps 18-19): export the evidence, assemble the verifier's
inputs from the harness's own copies, run the verifier (§8, §9)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

from orchestra.documents.enums import ErrorType, Phase
from orchestra.evidence.agent_files import AgentFile
from orchestra.evidence.export import (
    EvidenceContext,
    EvidenceExportError,
    evidence_text,
    export_evidence,
    record_export_failure,
)
from orchestra.stack.watch import during
from orchestra.trial import relay_ops
from orchestra.trial.context import JobContext
from orchestra.trial.errors import TrialError
from orchestra.trial.record import enter_phase
from orchestra.trial.redact import redact_value, trial_secrets
from orchestra.trial.state import TrialState
from orchestra.trial.written_files import written_files
from orchestra.verify.inputs import VerifierInputs
from orchestra.verify.reward import VerifierFailure

EVIDENCE_SECONDS = 60.0


async def grade(state: TrialState, ctx: JobContext) -> None:
    enter_phase(state, Phase.EVIDENCE)
    await during(state.outage, export_and_place_evidence(state, ctx))
    enter_phase(state, Phase.VERIFY)
    await verify(state, ctx)


def evidence_context(
    state: TrialState, ctx: JobContext, agent_files: Sequence[AgentFile] = ()
) -> EvidenceContext:
    """What the trial knows for certain, in the shapes of §8.1; this trial's secrets out of
    what the agents wrote or published (§8.10)."""
    setup, completion = state.setup, state.agent_phase.completion
    assert setup.user is not None and setup.channel_id is not None
    secrets = trial_secrets(state, ctx)
    # the stored rows of the window hold other trials' events too: their secrets out as well
    stored_secrets = sorted(ctx.launched_secrets.union(secrets), key=len, reverse=True)
    capture = setup.capture
    return EvidenceContext(
        run_id=ctx.job_name,
        trial_id=state.trial_id,
        channel_id=setup.channel_id,
        task_name=state.task.short_name,
        task_event_id=state.agent_phase.task_event_id,
        completion_message_id=completion.completion_message_id if completion else None,
        identities={
            setup.user.name: {"role": "user", "pubkey": setup.user.pubkey},
            **{
                slot.agent_id: {
                    "role": slot.kind,
                    "pubkey": setup.agent_keys[slot.agent_id].pubkey,
                }
                for slot in state.slots
            },
        },
        directory=[
            {
                "identity_id": entry.key,
                "name": entry.name,
                "role": entry.role,
                "pubkey": identity.pubkey,
                "about": entry.about or "",
            }
            for entry, identity in setup.directory
        ],
        scripted_events=[event.model_dump() for event in state.agent_phase.scripted_events],
        observe_channel_names=state.task.fixture.observe_channel_names,
        agent_pubkeys=[keys.pubkey for keys in setup.agent_keys.values()],
        arrival=setup.observer.arrival if setup.observer is not None else {},
        captured=redact_value(capture.events(), secrets) if capture is not None else [],
        capture_failure=capture.failure if capture is not None else "never started",
        stored=redact_value(capture.stored(), stored_secrets) if capture is not None else [],
        relay_events_scope=capture.scope if capture is not None else "readable",
        agent_files=redact_value(list(agent_files), secrets),
    )


async def export_and_place_evidence(state: TrialState, ctx: JobContext) -> None:
    """Step 18: the evidence on the host (§8.5); the verifier gets its bytes at step 19."""
    try:
        async with asyncio.timeout(EVIDENCE_SECONDS):
            files = await collect_agent_files(state)
            evidence = await export_evidence(
                evidence_context(state, ctx, files),
                user_reader=state.user_client(ctx),
                orchestrator_reader=state.agent_client(state.orchestrator_id),
                memory_readers={
                    slot.agent_id: state.agent_client(slot.agent_id) for slot in state.slots
                },
                trial=state.paths,
                run=relay_ops.relay_operation,
                log=state.recorder.log,
            )
    except Exception as error:  # every failure of §8.3-§8.5 is an export failure (§8.6)
        if not isinstance(error, EvidenceExportError):
            record_export_failure(error, state.paths)
        if state.task.fixture.requires_evidence:
            raise TrialError(
                ErrorType.EVIDENCE_EXPORT_ERROR,
                str(error) or f"export exceeded {EVIDENCE_SECONDS:g} s",
            ) from error
        state.recorder.log(f"evidence export failed (not required): {error}")
        return
    state.grading.evidence = evidence_text(evidence).encode("utf-8")
    state.grading.authored = dict(Counter(str(m["pubkey"]) for m in evidence["messages"]))


async def collect_agent_files(state: TrialState) -> list[AgentFile]:
    """§8.10: what changed in the workspace and home since launch; the environment's agents
    share them, so the rows name the orchestrator agent."""
    before = state.setup.files_before
    if before is None:
        raise EvidenceExportError("the workspace was never recorded before launch")
    return await written_files(state.env, before, state.orchestrator_id)


def verifier_inputs(state: TrialState) -> VerifierInputs:
    """Exactly what the verifier may read (§9): the exported evidence, the task's `tests/` as
    read when the job started, the fixture's files as rendered; nothing the agents touched."""
    return VerifierInputs.assemble(
        evidence=state.grading.evidence,
        tests=state.task.tests,
        fixture_files=[
            (rendered.spec.path, rendered.content, rendered.spec.mode_bits)
            for rendered in state.setup.fixture_files
        ],
    )


async def verify(state: TrialState, ctx: JobContext) -> None:
    """Step 19, in the verifier the environment kind provides (§9); a Harbor task's in the
    environment its agents worked in."""
    grading = state.grading
    if not grading.evidence_exported and state.task.fixture.requires_evidence:
        return
    changed = state.task.tests_changed_on_disk()
    if changed:
        state.recorder.log(
            f"tests/ of {state.task.dir} changed on disk since the job started "
            f"({', '.join(changed)}); the verifier runs the copy read then"
        )
    inputs = verifier_inputs(state)
    grading.verifier_inputs = inputs.record()
    if state.task.is_harbor:  # graded on the state the agents left (docs/decisions.md D46)
        verifier = state.env.state_verifier()
    else:
        verifier = ctx.environments.verifier(state.paths, state.task, state.trial_id)
    try:
        run = await verifier.run(inputs, state.timeouts.verifier_seconds, state.recorder.log)
    except VerifierFailure as failure:  # an error of §9.4; what the verifier left is kept
        grading.verifier, grading.rewards = failure.verifier, failure.rewards
        raise
    grading.verifier, grading.rewards = run.summary(), run.rewards
    grading.reward = run.rewards["reward"]
