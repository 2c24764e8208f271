"""The trial's `result.json` and `trial.log` (orchestrator.md §10.3)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from orchestra.config.manifest import AgentSlot
from orchestra.config.task import Task
from orchestra.documents.enums import EnvKind
from orchestra.documents.trial import (
    RosterAgent,
    TaskRecord,
    Timeouts,
    TrialConfig,
    TrialIdentity,
    TrialResult,
)
from orchestra.jsonio import utc_timestamp, write_json_atomic
from orchestra.paths import TrialPaths
from orchestra.trial.context import JobContext


class TrialRecorder:
    """Holds the result document; every phase change rewrites it atomically."""

    def __init__(
        self, paths: TrialPaths, base: dict[str, Any], on_update: Callable[[dict[str, Any]], None]
    ) -> None:
        self.paths = paths
        self._on_update = on_update
        self._phase_clock: dict[str, float] = {}
        self._log_file: TextIO | None = None
        identity = TrialIdentity.model_validate(base)
        self.result: dict[str, Any] = TrialResult.starting(identity, utc_timestamp()).model_dump(
            mode="json"
        )

    def log(self, line: str) -> None:
        """Append to trial.log; the file stays open (line-buffered) until the trial finishes."""
        if self._log_file is None or self._log_file.closed:
            self.paths.root.mkdir(parents=True, exist_ok=True)
            self._log_file = self.paths.trial_log.open("a", encoding="utf-8", buffering=1)
        stamp = datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3]
        self._log_file.write(f"{stamp} {line}\n")

    def enter(self, phase: str) -> None:
        """Close the current phase's timing, open `phase`, write the result."""
        self._close_phase()
        self._phase_clock[phase] = time.monotonic()
        self.result["timings"][phase] = {
            "started_at": utc_timestamp(),
            "finished_at": None,
            "seconds": None,
        }
        self.result["phase"] = phase
        self.log(f"phase {phase}")
        self.write()

    def _close_phase(self) -> None:
        current = self.result["phase"]
        timing = self.result["timings"].get(current)
        if timing is not None and timing["finished_at"] is None:
            timing["finished_at"] = utc_timestamp()
            timing["seconds"] = round(time.monotonic() - self._phase_clock[current], 6)

    def finish(self, status: str) -> None:
        self._close_phase()
        self.result["status"] = status
        self.result["finished_at"] = utc_timestamp()
        self.write()
        if self._log_file is not None:
            self._log_file.close()

    def write(self) -> None:
        write_json_atomic(self.paths.result_json, self.result)
        self._on_update(self.result)


def base_record(
    ctx: JobContext, task: Task, trial_id: str, name: str, attempt: int
) -> dict[str, Any]:
    """The identifying keys shared by the trial's config.json and result.json."""
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
    ).model_dump(mode="json")


def trial_config(
    base: dict[str, Any],
    ctx: JobContext,
    task: Task,
    slots: Sequence[AgentSlot],
    *,
    timeouts: dict[str, float],
) -> dict[str, Any]:
    """The trial's `config.json` (§10.2), written at step 1."""
    return TrialConfig(
        trial_id=base["trial_id"],
        trial_name=base["trial_name"],
        job_name=base["job_name"],
        task=TaskRecord.model_validate(task.record()),
        attempt=base["attempt"],
        condition=base["condition"],
        manifest_sha256=base["manifest_sha256"],
        environment=EnvKind(ctx.environment),
        timeouts=Timeouts.model_validate(timeouts),
        roster=[
            RosterAgent(
                agent_id=slot.agent_id,
                class_id=slot.class_id,
                kind=slot.kind,
                role=slot.role,
                endpoint=slot.entry.endpoint,
                model_revision=slot.entry.model_revision,
            )
            for slot in slots
        ],
    ).model_dump(mode="json")
