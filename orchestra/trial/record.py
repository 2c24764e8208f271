"""The trial's `config.json` and `result.json` (orchestrator.md §10.2, §10.3).

`result.json` is rendered from the trial's state at every phase change, field by field from
the typed parts the phases hold; the recorder (orchestra.trial.recorder) adds status, phase
and the phase clock.
"""

from __future__ import annotations

from orchestra.documents.enums import Phase
from orchestra.documents.trial import (
    BuzzAgent,
    BuzzRecord,
    BuzzUser,
    RosterAgent,
    TaskRecord,
    Timeouts,
    TrialConfig,
    TrialResult,
)
from orchestra.trial.context import JobContext
from orchestra.trial.errors import exception_info
from orchestra.trial.state import TrialState


def write_result(state: TrialState) -> TrialResult:
    """Rewrite `result.json` from the state; returns the document written."""
    result = result_document(state)
    state.recorder.write(result)
    return result


def enter_phase(state: TrialState, phase: Phase) -> None:
    state.recorder.enter(phase)
    write_result(state)


def record_failure(state: TrialState, error: BaseException) -> None:
    """The trial's error (§12), classified in the phase it happened in; also in trial.log."""
    info = exception_info(error, state.recorder.phase)
    state.exception_info = info
    state.recorder.log(f"error {info.exception_type}: {info.exception_message}")
    state.recorder.log(info.exception_traceback.rstrip())


def result_document(state: TrialState) -> TrialResult:
    """The trial's `result.json` (§10.3) as it stands."""
    identity, recorder = state.identity, state.recorder
    completion, grading = state.agent_phase.completion, state.grading
    accounting = state.finalize.accounting
    return TrialResult(
        trial_id=identity.trial_id,
        trial_name=identity.trial_name,
        job_name=identity.job_name,
        task_name=identity.task_name,
        short_name=identity.short_name,
        layer=identity.layer,
        attempt=identity.attempt,
        condition=identity.condition,
        manifest_sha256=identity.manifest_sha256,
        status=recorder.status,
        phase=recorder.phase,
        stop_reason=completion.stop_reason if completion else None,
        reward=grading.reward,
        rewards=grading.rewards,
        verifier=grading.verifier,
        verifier_inputs=grading.verifier_inputs,
        started_at=recorder.started_at,
        finished_at=recorder.finished_at,
        timings=recorder.timings(state.finalize.agent_active_seconds),
        tokens=accounting.tokens,
        cost_usd=accounting.cost_usd,
        accounting=accounting.accounting,
        cached_estimated=accounting.cached_estimated,
        budget_exceeded=completion.budget_exceeded if completion else None,
        flags=state.finalize.flags,
        unaccounted_events=list(completion.unaccounted_events) if completion else [],
        buzz=buzz_record(state),
        trajectories=state.teardown.trajectories,
        secret_scan=state.finalize.secret_scan,
        exception_info=state.exception_info,
        sandbox=state.env.facts.sandbox,
        retried_from=state.retried_from,
    )


def buzz_record(state: TrialState) -> BuzzRecord:
    """The `buzz` object: what the trial did on the relay."""
    setup, agent_phase = state.setup, state.agent_phase
    completion, user, authored = agent_phase.completion, setup.user, state.grading.authored
    logs, seat_flags = state.log_states(), state.finalize.seat_flags
    return BuzzRecord(
        channel_id=setup.channel_id,
        channel_name=setup.channel_name,
        task_event_id=agent_phase.task_event_id,
        completion_message_id=completion.completion_message_id if completion else None,
        scripted_events=agent_phase.scripted_events,
        evidence_exported=state.grading.evidence_exported,
        user=BuzzUser(name=user.name, pubkey=user.pubkey) if user else None,
        agents=[
            BuzzAgent(
                agent_id=slot.agent_id,
                role=slot.role,
                kind=slot.kind,
                endpoint=slot.entry.endpoint,
                pubkey=keys.pubkey,
                messages=None if authored is None else authored.get(keys.pubkey, 0),
                requests=log.requests if (log := logs.get(slot.agent_id)) else None,
                active_seconds=round(log.active_seconds, 3) if log else None,
                flags=seat_flags.get(slot.agent_id, []),
            )
            for slot in state.slots
            if (keys := setup.agent_keys.get(slot.agent_id)) is not None
        ],
    )


def write_trial_config(state: TrialState, ctx: JobContext) -> None:
    """Step 1: the trial's directory with its `config.json` (§10.2)."""
    state.paths.root.mkdir(parents=True)
    identity = state.identity
    TrialConfig(
        trial_id=identity.trial_id,
        trial_name=identity.trial_name,
        job_name=identity.job_name,
        task=TaskRecord.model_validate(state.task.record()),
        attempt=identity.attempt,
        condition=identity.condition,
        manifest_sha256=identity.manifest_sha256,
        environment=ctx.environments.name,
        timeouts=Timeouts(
            agent_seconds=state.timeouts.agent_seconds,
            verifier_seconds=state.timeouts.verifier_seconds,
        ),
        roster=[
            RosterAgent(
                agent_id=slot.agent_id,
                class_id=slot.class_id,
                kind=slot.kind,
                role=slot.role,
                endpoint=slot.entry.endpoint,
                model_revision=slot.entry.model_revision,
            )
            for slot in state.slots
        ],
    ).write(state.paths.config_json)
