"""Finalize (orchestrator.md §7.2 steps 20-21): archive the channel, release the trial's
clients and environment, account, redact secrets, write the final result."""

from __future__ import annotations

from orchestra.documents.enums import ErrorType, Phase, TrialStatus
from orchestra.documents.trial import ExceptionInfo
from orchestra.trial import relay_ops
from orchestra.trial.accounting import trial_accounting
from orchestra.trial.context import JobContext
from orchestra.trial.errors import TrialError, exception_info
from orchestra.trial.liveness import seat_flags, trial_flags
from orchestra.trial.record import enter_phase, write_result
from orchestra.trial.redact import redact_text, redact_tree, trial_secrets
from orchestra.trial.state import TrialState


async def finalize(state: TrialState, ctx: JobContext) -> None:
    enter_phase(state, Phase.FINALIZE)
    log = state.recorder.log
    try:
        await archive_channel(state, ctx)
    except Exception as error:
        log(f"archive failed: {type(error).__name__}: {error}")
    await state.trial_clients.close()
    try:
        await state.env.close()
    except Exception as error:
        log(f"removing the environment failed: {type(error).__name__}: {error}")
    account(state, ctx)
    flag_liveness(state)
    redact_secrets(state, ctx)
    state.finalize.agent_active_seconds = round(
        sum((follower.state.active_seconds for follower in state.setup.followers.values()), 0.0),
        3,
    )
    if state.cancelled_in is not None and state.exception_info is None:
        interrupted = TrialError(ErrorType.CANCELLED, "interrupted")
        state.exception_info = exception_info(interrupted, state.cancelled_in)
    state.recorder.finish(final_status(state))
    write_result(state)
    state.recorder.close()


async def archive_channel(state: TrialState, ctx: JobContext) -> None:
    """Step 20; an interrupted trial goes from stop and log collection straight here (§7.6),
    and one whose stack went down leaves its channel as it is."""
    channel_id = state.setup.channel_id
    if channel_id is None or ctx.options.keep_channels or state.cancelled:
        return
    if state.outage.happened.is_set():
        state.recorder.log(f"channel not archived: stack unavailable ({state.outage.reason})")
        return
    await relay_ops.archive_channel(state.user_client(ctx), channel_id)
    await ctx.registry.mark_archived(run_id=ctx.job_name, trial_id=state.trial_id)


def account(state: TrialState, ctx: JobContext) -> None:
    """Tokens and cost from the ACP event logs (§7.14)."""
    if not state.setup.followers:
        return
    prices = ctx.condition.manifest.prices
    endpoints = {slot.agent_id: slot.entry.endpoint for slot in state.slots}
    states = state.log_states()
    state.finalize.accounting = trial_accounting(
        states, {agent_id: prices[endpoints[agent_id]] for agent_id in states}
    )


def flag_liveness(state: TrialState) -> None:
    """The seats' and the trial's liveness flags (§10.3), once the transcript is counted."""
    authored, keys = state.grading.authored, state.setup.agent_keys
    ran = {agent_id: log for agent_id, log in state.log_states().items() if log.ran_turns}
    seats = {
        agent_id: seat_flags(
            log,
            None if authored is None or agent_id not in keys
            else authored.get(keys[agent_id].pubkey, 0),
        )
        for agent_id, log in ran.items()
    }  # fmt: skip
    completion = state.agent_phase.completion
    state.finalize.seat_flags = seats
    state.finalize.flags = trial_flags(
        seats,
        completion.stop_reason if completion else None,
        state.finalize.accounting.accounting,
        ran_turns=bool(ran),
    )
    if state.finalize.flags:
        state.recorder.log(f"liveness flags: {', '.join(state.finalize.flags)}")


def redact_secrets(state: TrialState, ctx: JobContext) -> None:
    """§7.15: every secret of this trial out of every file it wrote."""
    secrets = trial_secrets(state, ctx)
    state.finalize.secret_scan = redact_tree(state.paths.root, secrets)
    info = state.exception_info
    if info is not None:  # result.json is written after the scan
        state.exception_info = ExceptionInfo(
            exception_type=info.exception_type,
            exception_message=redact_text(info.exception_message, secrets),
            exception_traceback=redact_text(info.exception_traceback, secrets),
            occurred_at=info.occurred_at,
            phase=info.phase,
        )


def final_status(state: TrialState) -> TrialStatus:
    """`cancelled` when interrupted, `error` on a recorded error, else `scored` with a reward."""
    if state.cancelled:
        return TrialStatus.CANCELLED
    if state.exception_info is not None or state.grading.reward is None:
        return TrialStatus.ERROR
    return TrialStatus.SCORED
