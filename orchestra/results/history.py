"""A condition's recent runs in the results database as each task's baseline (docs/results-db.md
"History as the baseline"; docs/statistics.md "The nightly decision").

Only runs that measured the same thing are pooled: the candidate's condition, manifest hash
and trial timeout multiplier, and per task the same contract digest (the task's files without
`solution/`); every run left out is counted under its reason. Per task the pool holds the
scored trials of each run's first k attempts; the confirmation attempts beyond k (reruns of a
task that looked regressed) are kept apart, and only those of the most recent runs count, as
fresh evidence that builds up over a few nights (`RECENT_RUNS`).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from orchestra.plural import plural

#: Runs pooled per task by default (`--history-runs`).
HISTORY_RUNS = 30
#: The latest runs whose confirmation attempts join tonight's and whose failed first attempts
#: keep a task under watch (docs/statistics.md "The nightly decision").
RECENT_RUNS = 2
ANOTHER_MANIFEST = "another manifest hash"
ANOTHER_TIMEOUT = "another timeout multiplier"


@dataclass(frozen=True)
class PoolKey:
    """What a run must share with the candidate to be pooled."""

    condition: str
    manifest_sha256: str
    timeout_multiplier: float


@dataclass
class TaskHistory:
    """One task's pooled counts: first-k attempts, and the recent runs' confirmation ones."""

    task: str
    layer: str
    passes: int = 0
    scored: int = 0
    errors: int = 0
    runs: int = 0  # runs that hold a trial of it with its contract digest
    other_digest_runs: int = 0  # runs left out for this task: its files differed
    recent_passes: int = 0  # confirmation attempts of the `RECENT_RUNS` latest runs
    recent_scored: int = 0
    recent_first_failed: bool = False  # a first-k attempt failed in one of those runs
    #: per metric of the pooled first-k trials: [passed, scored]
    metrics: dict[str, list[int]] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.scored if self.scored else None


@dataclass(frozen=True)
class History:
    key: PoolKey
    source: str  # the database, as given
    runs: list[str]  # the pooled runs' names, newest first
    left_out: dict[str, int]  # reason -> runs of the condition left out
    tasks: dict[str, TaskHistory] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """What was pooled, for the output (one line, then one per task left partly out)."""
        key = self.key
        pooled = (
            f"baseline: the history in {self.source}: {plural(len(self.runs), 'run')} of "
            f"condition {key.condition} pooled (manifest {key.manifest_sha256[:12]}, timeout "
            f"×{key.timeout_multiplier:g}"
        )
        if self.runs:
            pooled += f"; {self.runs[-1]} … {self.runs[0]}"
        pooled += ")"
        if self.left_out:
            reasons = ", ".join(f"{n} with {why}" for why, n in sorted(self.left_out.items()))
            pooled += f"; left out: {reasons}"
        lines = [pooled]
        for task in sorted(self.tasks.values(), key=lambda t: t.task):
            if task.other_digest_runs:
                lines.append(
                    f"baseline: {task.task}: {plural(task.other_digest_runs, 'run')} left out "
                    "(another task digest)"
                )
        return lines


def read_history(
    connection: sqlite3.Connection,
    key: PoolKey,
    digests: Mapping[str, str],
    *,
    source: str,
    runs: int = HISTORY_RUNS,
    exclude_run_id: str | None = None,
) -> History:
    """The `runs` latest runs of `key.condition` that share the key, pooled per task (a task
    absent from `digests`, or with an empty digest there, is pooled whatever its files);
    `source` names the database in the output."""
    found = connection.execute(
        "SELECT run_key, run_id, name, manifest_sha256, timeout_multiplier FROM runs"
        " WHERE condition = ? ORDER BY created_at DESC, run_key DESC",
        (key.condition,),
    ).fetchall()
    left_out: Counter[str] = Counter()
    pooled: list[tuple[int, str]] = []
    for run_key, run_id, name, manifest, multiplier in found:
        if run_id == exclude_run_id or len(pooled) == runs:
            continue
        if manifest != key.manifest_sha256:
            left_out[ANOTHER_MANIFEST] += 1
        elif float(multiplier) != key.timeout_multiplier:
            left_out[ANOTHER_TIMEOUT] += 1
        else:
            pooled.append((int(run_key), str(name)))
    recent = {run_key for run_key, _ in pooled[:RECENT_RUNS]}
    history = History(key, source, [name for _, name in pooled], dict(left_out))
    _pool_trials(connection, history, [k for k, _ in pooled], recent, digests)
    return history


def _pool_trials(
    connection: sqlite3.Connection,
    history: History,
    run_keys: list[int],
    recent: set[int],
    digests: Mapping[str, str],
) -> None:
    if not run_keys:
        return
    marks = ", ".join("?" * len(run_keys))
    rows = connection.execute(
        "SELECT t.trial_key, t.run_key, t.task_name, t.layer, t.task_digest,"
        " t.attempt > j.attempts, t.status, t.passed FROM trials t JOIN jobs j USING (job_key)"
        f" WHERE t.run_key IN ({marks}) ORDER BY t.run_key",
        run_keys,
    ).fetchall()
    seen: set[tuple[int, str]] = set()
    other: set[tuple[int, str]] = set()
    pooled: dict[int, TaskHistory] = {}  # first-k scored trial -> its task
    for trial_key, run_key, task_name, layer, digest, beyond_k, status, passed in rows:
        task = history.tasks.setdefault(task_name, TaskHistory(task_name, layer))
        wanted = digests.get(task_name)
        if wanted and digest != wanted:
            if (run_key, task_name) not in other:
                other.add((run_key, task_name))
                task.other_digest_runs += 1
            continue
        if (run_key, task_name) not in seen:
            seen.add((run_key, task_name))
            task.runs += 1
        if beyond_k:
            if run_key in recent and status == "scored":
                task.recent_scored += 1
                task.recent_passes += int(passed)
        elif status == "scored":
            task.scored += 1
            task.passes += int(passed)
            pooled[int(trial_key)] = task
            task.recent_first_failed |= run_key in recent and not passed
        elif status == "error":
            task.errors += 1
    metrics = connection.execute(
        f"SELECT m.trial_key, m.name, m.passed FROM metrics m JOIN trials t USING (trial_key)"
        f" WHERE t.run_key IN ({marks})",
        run_keys,
    )
    for trial_key, name, passed in metrics:
        if (owner := pooled.get(int(trial_key))) is not None:
            counts = owner.metrics.setdefault(str(name), [0, 0])
            counts[0] += int(passed)
            counts[1] += 1
