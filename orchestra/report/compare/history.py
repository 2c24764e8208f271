"""`orchestra compare --baseline-history DB CANDIDATE`: the baseline side built from the
candidate condition's recent runs in a results database (orchestra.results.history), pooled
only where they measured the same thing as the candidate (its manifest hash, timeout
multiplier and, per task, contract digest)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from orchestra.documents.io import DocumentError
from orchestra.report.compare.comparison import CompareInputError, Side, SideTask
from orchestra.report.stats.confirm import Counts
from orchestra.results.database import read_directory
from orchestra.results.history import HISTORY_RUNS, History, PoolKey, read_history
from orchestra.results.schema import DatabaseError, open_database


def history_side(database: Path, candidate: Path, runs: int = HISTORY_RUNS) -> Side:
    """The baseline side (`CompareInputError` with one line for a bad database or a
    candidate that is not a run or job directory)."""
    if not candidate.is_dir():
        raise CompareInputError(
            f"{candidate}: --baseline-history compares a run or job directory (its manifest, "
            "timeout multiplier and task files choose the runs pooled)"
        )
    try:
        addition = read_directory(candidate)
        connection = open_database(database, create=False)
    except (DocumentError, DatabaseError) as error:
        raise CompareInputError(str(error)) from None
    run = addition.run
    key = PoolKey(run.condition, run.manifest_sha256, run.timeout_multiplier)
    digests = {
        task.name: task.contract_digest or task.digest
        for job in addition.jobs
        for task in job.record.tasks
    }
    try:
        history = read_history(
            connection, key, digests, source=str(database), runs=runs, exclude_run_id=run.run_id
        )
    except sqlite3.Error as error:
        raise CompareInputError(f"{database}: cannot read the history ({error})") from None
    finally:
        connection.close()
    return side_of_history(history)


def side_of_history(history: History) -> Side:
    tasks = {
        name: SideTask(
            layer=task.layer,
            scored=task.scored,
            errors=task.errors,
            cancelled=0,
            pass_rate=task.pass_rate or 0.0,
            successes=task.passes,
            metrics={metric: (passed, scored) for metric, (passed, scored) in task.metrics.items()},
        )
        for name, task in history.tasks.items()
    }
    return Side(
        label=f"history of {history.source}",
        condition=history.key.condition,
        tasks=tasks,
        recent={n: Counts(t.recent_passes, t.recent_scored) for n, t in history.tasks.items()},
        recent_first_failed=frozenset(n for n, t in history.tasks.items() if t.recent_first_failed),
        pooled=tuple(history.lines()),
    )
