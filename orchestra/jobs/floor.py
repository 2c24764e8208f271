"""The do-nothing floor as summaries read it (docs/decisions.md D114): a run's `floor.json`
attached to its job records, and the condition's floor figures built from them. The run layer
computes and stores the floor (`orchestra.run.floor`); everything here only reads it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from orchestra.documents.enums import Flag, TrialStatus
from orchestra.documents.floor import FLOOR_PASS, RunFloor
from orchestra.documents.summary import FloorSummary, LayerSummary
from orchestra.paths import RunPaths

if TYPE_CHECKING:  # aggregate builds the floor summary with `floor_summary`
    from orchestra.jobs.aggregate import JobRecord


def attach_floor(records: Iterable[JobRecord], run: RunPaths) -> None:
    """Give each record the floor `run`'s `floor.json` holds for its tasks (a task whose
    contract changed since is left out); no file, no floor."""
    document = RunFloor.load_if_readable(run.floor_json)
    if document is None:
        return
    for record in records:
        for task in record.tasks:
            floor = document.tasks.get(task.name)
            if floor is None:
                continue
            if task.contract_digest and task.contract_digest != floor.contract_digest:
                continue
            record.floor[task.name] = floor


def floor_summary(
    layers: dict[str, LayerSummary], records: Sequence[JobRecord]
) -> FloorSummary | None:
    """The condition's floor over its tasks, each task's own set on its row; None when no
    record carries a floor (a run that computed none, or an oracle's)."""
    floors = {name: floor for record in records for name, floor in record.floor.items()}
    if not floors:
        return None
    known: list[float] = []
    unknown: list[str] = []
    passing: set[str] = set()
    for layer in layers.values():
        for name, task in layer.tasks.items():
            floor = floors.get(name)
            if floor is None or floor.reward is None:
                unknown.append(name)
                continue
            task.floor = floor.reward
            known.append(floor.reward)
            if floor.passes:
                passing.add(name)
    idle = sum(
        1
        for record in records
        for trial in record.trials
        if trial.task_name in passing
        and trial.attempt <= record.attempts
        and trial.status is TrialStatus.SCORED
        and trial.reward is not None
        and trial.reward >= FLOOR_PASS
        and Flag.NO_TOOL_CALL in trial.flags
    )
    return FloorSummary(
        value=sum(known) / len(known) if known else None,
        n_tasks=len(known),
        unknown=sorted(unknown),
        passing=sorted(passing),
        idle_passes=idle,
    )
