"""The do-nothing floor (orchestrator.md §2.2 `--no-floor`, §10.1, docs/decisions.md D114): what a
roster whose every seat is on the built-in `null` endpoint scores on a task.

`FloorRecord` is the state directory's cache, one file per contract digest
(`<state-dir>/floor/<contract digest>.json`): a task's floor is computed once for its contract,
whatever run asks. `RunFloor` is the run directory's `floor.json`: the floor of each of the
run's tasks, so the report layer reads it without the cache.
"""

from __future__ import annotations

from typing import Literal

from orchestra.documents.io import Document, Sha256, Timestamp
from orchestra.documents.trial import Part

#: A floor at or above this is a task a do-nothing agent passes (marked in summaries).
FLOOR_PASS = 1.0


class FloorRecord(Document):
    """`<state-dir>/floor/<contract digest>.json`: one scored do-nothing trial of a task."""

    schema_version: Literal[1] = 1
    contract_digest: Sha256
    task_name: str
    reward: float  # the scored trial's reward (errors are never cached)
    trial: str  # the trial directory it came from, as it was then
    at: Timestamp


class TaskFloor(Part):
    """One task's floor in a run: `reward` None when its floor trial did not score (unknown,
    shown as "—", never 0)."""

    contract_digest: Sha256
    reward: float | None
    source: Literal["cache", "trial"]  # read from the cache, or this run's floor job
    trial: str | None = None  # the trial directory (a floor job's trial, or the cached one)

    @property
    def passes(self) -> bool:
        return self.reward is not None and self.reward >= FLOOR_PASS


class RunFloor(Document):
    """`<run>/floor.json`: task name -> its floor, written after the run's floor job."""

    schema_version: Literal[1] = 1
    tasks: dict[str, TaskFloor]
