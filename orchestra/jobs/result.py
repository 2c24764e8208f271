"""The job's `result.json`, rewritten after every trial state change (orchestrator.md §10.4)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from orchestra.jobs.jsonio import read_json_object, utc_timestamp, write_json_atomic
from orchestra.paths import JobPaths
from orchestra.report.aggregate import JobRecord, aggregate
from orchestra.report.load import record_from_config

# A trial's state as the job document tracks it: the file is rewritten when one of these changes
# (§10.1: "after every trial state change"); phases, and the reward and tokens recorded before
# the trial ends, reach it with the trial's next state change.
TRIAL_STATE_FIELDS = ("status", "finished_at")


class JobResult:
    def __init__(self, paths: JobPaths, config: dict[str, Any], n_planned: int) -> None:
        self.paths = paths
        self.config = config
        self.n_planned = n_planned
        self.trials: dict[str, dict[str, Any]] = {}  # trial name -> latest result
        self._states: dict[str, list[Any]] = {}  # trial name -> its state last written
        self.started_at = utc_timestamp()
        previous = read_json_object(paths.result_json) or {}  # a resume keeps started_at
        self.started_at = str(previous.get("started_at") or self.started_at)

    def seed(self, results: Iterable[dict[str, Any]]) -> None:
        for result in results:
            self.trials[result["trial_name"]] = result

    def update(self, result: dict[str, Any]) -> None:
        """Record a trial's latest result; rewrite the file when the trial's state changed.

        A trial reports every phase change; the rewrite, with its aggregation and fsync,
        happens only for a new state.
        """
        name = result["trial_name"]
        self.trials[name] = dict(result)
        state = [result.get(field) for field in TRIAL_STATE_FIELDS]
        if self._states.get(name) != state:
            self._states[name] = state
            self.write()

    def record(self) -> JobRecord:
        record = record_from_config(self.config, self.paths.root)
        record.trials = list(self.trials.values())
        return record

    def write(self) -> None:
        trials = list(self.trials.values())
        counts = {
            status: sum(1 for t in trials if t["status"] == status)
            for status in ("scored", "error", "cancelled", "running")
        }
        billed = [t for t in trials if isinstance(t.get("tokens"), dict)]
        terminal = counts["scored"] + counts["error"] + counts["cancelled"]
        finished = terminal >= self.n_planned and counts["running"] == 0
        conditions = aggregate([self.record()])["conditions"]
        document = {
            "schema_version": 1,
            "id": self.config["id"],
            "job_name": self.config["job_name"],
            "started_at": self.started_at,
            "updated_at": utc_timestamp(),
            "finished_at": utc_timestamp() if finished else None,
            "condition": self.config["manifest"]["condition"],
            "manifest_sha256": self.config["manifest"]["sha256"],
            "n_planned": self.n_planned,
            "stats": {
                "n_scored": counts["scored"],
                "n_errors": counts["error"],
                "n_cancelled": counts["cancelled"],
                "n_running": counts["running"],
                "n_pending": max(0, self.n_planned - len(trials)),
                "tokens": {
                    key: sum(int(t["tokens"].get(key) or 0) for t in billed)
                    for key in ("input", "cached_input", "output")
                },
                "cost_usd": sum(float(t.get("cost_usd") or 0.0) for t in billed),
            },
            "aggregates": conditions[0]["layers"] if conditions else {},
            "trials": [
                {
                    "trial_name": t["trial_name"],
                    "task_name": t["task_name"],
                    "attempt": t["attempt"],
                    "status": t["status"],
                    "reward": t.get("reward"),
                }
                for t in sorted(
                    trials, key=lambda t: (t["attempt"], t["task_name"], t["trial_name"])
                )
            ],
        }
        write_json_atomic(self.paths.result_json, document)
