"""The trial's `config.json`, `result.json` and `trial.log` (orchestrator.md §10.2, §10.3).

`result.json` is rendered from the trial's state, as the `TrialResult` document, at every
phase change; the recorder keeps only what the document adds to the state: status, phase and
the phase clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from orchestra.documents.enums import EnvKind
from orchestra.documents.trial import (
    RosterAgent,
    TaskRecord,
    Timeouts,
    TrialConfig,
    TrialIdentity,
    TrialResult,
)
from orchestra.jsonio import utc_timestamp
from orchestra.paths import TrialPaths
from orchestra.trial.errors import exception_info

if TYPE_CHECKING:
    from orchestra.config.task import Task
    from orchestra.trial.context import JobContext
    from orchestra.trial.state import TrialState


class TrialRecorder:
    """Status, phase and phase timings of one trial; writes its documents and its log."""

    def __init__(self, paths: TrialPaths, on_update: Callable[[TrialResult], None]) -> None:
        self.paths = paths
        self._on_update = on_update
        self.status = "running"
        self.phase = "setup"
        self.started_at = utc_timestamp()
        self.finished_at: str | None = None
        self.timings: dict[str, dict[str, Any]] = {}
        self._phase_clock: dict[str, float] = {}
        self._log_file: TextIO | None = None

    def log(self, line: str) -> None:
        """Append to trial.log; the file stays open (line-buffered) until the trial finishes."""
        if self._log_file is None or self._log_file.closed:
            self.paths.root.mkdir(parents=True, exist_ok=True)
            self._log_file = self.paths.trial_log.open("a", encoding="utf-8", buffering=1)
        stamp = datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3]
        self._log_file.write(f"{stamp} {line}\n")

    def enter(self, phase: str) -> None:
        """Close the current phase's timing and open `phase`."""
        self._close_phase()
        self._phase_clock[phase] = time.monotonic()
        self.timings[phase] = {"started_at": utc_timestamp(), "finished_at": None, "seconds": None}
        self.phase = phase
        self.log(f"phase {phase}")

    def _close_phase(self) -> None:
        timing = self.timings.get(self.phase)
        if timing is not None and timing["finished_at"] is None:
            timing["finished_at"] = utc_timestamp()
            timing["seconds"] = round(time.monotonic() - self._phase_clock[self.phase], 6)

    def finish(self, status: str) -> None:
        self._close_phase()
        self.status = status
        self.finished_at = utc_timestamp()

    def write(self, result: TrialResult) -> None:
        result.write(self.paths.result_json)
        self._on_update(result)

    def close(self) -> None:
        if self._log_file is not None:
            self._log_file.close()


def write_result(state: TrialState) -> TrialResult:
    """Rewrite `result.json` from the state; returns the document written."""
    result = result_document(state)
    state.recorder.write(result)
    return result


def enter_phase(state: TrialState, phase: str) -> None:
    state.recorder.enter(phase)
    write_result(state)


def record_failure(state: TrialState, error: BaseException) -> None:
    """The trial's error (§12), classified in the phase it happened in; also in trial.log."""
    info = exception_info(error, state.recorder.phase)
    state.exception_info = info
    state.recorder.log(f"error {info['exception_type']}: {info['exception_message']}")
    state.recorder.log(info["exception_traceback"].rstrip())


def result_document(state: TrialState) -> TrialResult:
    """The trial's `result.json` (§10.3) as it stands."""
    recorder, completion, accounting = state.recorder, state.completion, state.accounting
    document = {
        **state.identity.model_dump(),
        "status": recorder.status,
        "phase": recorder.phase,
        "stop_reason": completion.stop_reason if completion else None,
        "reward": state.reward,
        "rewards": state.rewards,
        "verifier": state.verifier,
        "verifier_inputs": state.verifier_inputs,
        "started_at": recorder.started_at,
        "finished_at": recorder.finished_at,
        "timings": {"agent_active_seconds": state.agent_active_seconds, **recorder.timings},
        "tokens": accounting.tokens if accounting else None,
        "cost_usd": accounting.cost_usd if accounting else None,
        "accounting": accounting.accounting if accounting else "unavailable",
        "cached_estimated": accounting.cached_estimated if accounting else False,
        "budget_exceeded": completion.budget_exceeded if completion else None,
        "unaccounted_events": list(completion.unaccounted_events) if completion else [],
        "buzz": buzz_record(state),
        "trajectories": state.trajectories,
        "secret_scan": state.secret_scan,
        "exception_info": state.exception_info,
        "sandbox": state.env.facts.sandbox,
        "retried_from": state.retried_from,
    }
    return TrialResult.model_validate(document)


def buzz_record(state: TrialState) -> dict[str, Any]:
    """The `buzz` object: what the trial did on the relay."""
    completion, user = state.completion, state.user
    return {
        "channel_id": state.channel_id,
        "channel_name": state.channel_name,
        "task_event_id": state.task_event_id,
        "completion_message_id": completion.completion_message_id if completion else None,
        "scripted_events": state.scripted_events,
        "evidence_exported": state.evidence_exported,
        "user": {"name": user.name, "pubkey": user.pubkey} if user else None,
        "agents": [
            {
                "agent_id": slot.agent_id,
                "role": slot.role,
                "kind": slot.kind,
                "endpoint": slot.entry.endpoint,
                "pubkey": state.agent_keys[slot.agent_id].pubkey,
                "messages": None
                if state.authored is None
                else state.authored.get(state.agent_keys[slot.agent_id].pubkey, 0),
            }
            for slot in state.slots
            if slot.agent_id in state.agent_keys
        ],
    }


def trial_identity(
    ctx: JobContext, task: Task, trial_id: str, name: str, attempt: int
) -> TrialIdentity:
    """The keys that identify a trial in both its config.json and its result.json."""
    return TrialIdentity(
        trial_id=trial_id,
        trial_name=name,
        job_name=ctx.job_name,
        task_name=task.name,
        short_name=task.short_name,
        layer=task.layer,
        attempt=attempt,
        condition=ctx.condition.name,
        manifest_sha256=ctx.condition.manifest_sha256,
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
        environment=EnvKind(ctx.environments.name),
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
