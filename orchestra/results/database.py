"""Adding runs and jobs to the results database (`orchestra db`), read through the documents.

A run directory replaces every row of that run (its `run.json` id is the key); a job directory
of a run replaces that job's rows under its run; a job directory outside any run is a run of
its own (kind `job`, keyed by its config's id). Each directory is added in one transaction,
after it has been read completely, so a malformed document changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.config.errors import display_path, from_validation_error
from orchestra.documents.io import DocumentError
from orchestra.documents.run import RunRecord
from orchestra.documents.trial import TrialConfig, TrialResult
from orchestra.jobs.aggregate import JobRecord
from orchestra.jobs.layout import load_job_config, load_job_record
from orchestra.jobs.run import run_job_records, run_of
from orchestra.jobs.tally import metric_passed, seconds_between, succeeded
from orchestra.jsonio import utc_timestamp
from orchestra.paths import JobPaths, TrialPaths
from orchestra.results.schema import DatabaseError, open_database, transaction


@dataclass(frozen=True)
class RunRow:
    run_id: str
    name: str
    kind: str  # "run" | "job"
    path: Path
    created_at: str
    condition: str
    manifest_sha256: str
    environment: str
    orchestrator_version: str
    timeout_multiplier: float


@dataclass(frozen=True)
class LoadedJob:
    record: JobRecord
    layer: str


@dataclass(frozen=True)
class Addition:
    """What one directory adds: its run, and the jobs to replace (all of the run's when
    `whole_run`)."""

    run: RunRow
    jobs: list[LoadedJob]
    whole_run: bool


def _run_row(record: RunRecord, path: Path) -> RunRow:
    return RunRow(
        record.id, record.run_name, "run", path.resolve(), record.created_at, record.condition,
        record.manifest_sha256, record.environment, record.orchestrator_version,
        record.settings.trial.timeout_multiplier,
    )  # fmt: skip


def read_directory(path: Path) -> Addition:
    """The run or job at `path`, read through its documents (`DocumentError` when it is
    neither, or a document in it is malformed)."""
    run = run_of(path)
    if run is not None:
        record = RunRecord.load(run.run_json)
        layers = {job.job_name: job.plan.layer for job in record.jobs}
        if run.root == path:
            jobs = [LoadedJob(j, layers[j.name]) for j in run_job_records(run, record)]
            return Addition(_run_row(record, run.root), jobs, whole_run=True)
        job = load_job_record(path)
        layer = layers.get(job.name) or load_job_config(JobPaths(path)).plan.layer
        return Addition(_run_row(record, run.root), [LoadedJob(job, layer)], whole_run=False)
    config = load_job_config(JobPaths(path))
    row = RunRow(
        config.id, config.job_name, "job", path.resolve(), config.created_at,
        config.manifest.condition, config.manifest.sha256, config.environment,
        config.orchestrator_version, config.options.trial.timeout_multiplier,
    )  # fmt: skip
    return Addition(row, [LoadedJob(load_job_record(path), config.plan.layer)], whole_run=True)


def add_directory(connection: sqlite3.Connection, path: Path, *, messages: bool = True) -> int:
    """Add (or replace) the run or job at `path`; returns how many trials it holds. With
    `messages` false the trajectories are not read (the trend needs only the trials)."""
    addition = read_directory(path)
    trials = [
        _TrialRows.read(job.record, result, messages=messages)
        for job in addition.jobs
        for result in job.record.trials
    ]
    with transaction(connection):
        run_key = _replace_run(connection, addition)
        job_keys = {job.record.name: _insert_job(connection, run_key, job) for job in addition.jobs}
        for rows in trials:
            rows.insert(connection, run_key, job_keys[rows.result.job_name])
    return len(trials)


def _replace_run(connection: sqlite3.Connection, addition: Addition) -> int:
    run = addition.run
    values = (
        run.name, run.kind, str(run.path), run.created_at, run.condition, run.manifest_sha256,
        run.environment, run.orchestrator_version, run.timeout_multiplier, utc_timestamp(),
    )  # fmt: skip
    found = connection.execute("SELECT run_key FROM runs WHERE run_id = ?", (run.run_id,))
    row = found.fetchone()
    if row is None or addition.whole_run:
        connection.execute("DELETE FROM runs WHERE run_id = ?", (run.run_id,))
        cursor = connection.execute(
            "INSERT INTO runs (run_id, name, kind, path, created_at, condition, manifest_sha256,"
            " environment, orchestrator_version, timeout_multiplier, added_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run.run_id, *values),
        )
        return _key(cursor)
    run_key = int(row[0])
    connection.execute(
        "UPDATE runs SET name = ?, kind = ?, path = ?, created_at = ?, condition = ?,"
        " manifest_sha256 = ?, environment = ?, orchestrator_version = ?,"
        " timeout_multiplier = ?, added_at = ?"
        " WHERE run_key = ?",
        (*values, run_key),
    )
    names = [(run_key, job.record.name) for job in addition.jobs]
    connection.executemany("DELETE FROM jobs WHERE run_key = ? AND name = ?", names)
    return run_key


def _key(cursor: sqlite3.Cursor) -> int:
    if cursor.lastrowid is None:
        raise AssertionError("an INSERT without a row id")
    return cursor.lastrowid


def _insert_job(connection: sqlite3.Connection, run_key: int, job: LoadedJob) -> int:
    record = job.record
    cursor = connection.execute(
        "INSERT INTO jobs (run_key, name, path, started, layer, attempts, n_planned, condition,"
        " manifest_sha256, oracle, stopped, stop_message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
        " ?, ?)",
        (
            run_key, record.name, str(Path(record.path).resolve()), record.started, job.layer,
            record.attempts, record.attempts * len(record.tasks), record.condition,
            record.manifest_sha256, record.oracle, record.stopped, record.stop_message,
        ),
    )  # fmt: skip
    return _key(cursor)


@dataclass
class _TrialRows:
    """One trial's rows, read before the transaction opens."""

    result: TrialResult
    path: Path
    config: TrialConfig | None
    trajectories: dict[str, Trajectory]
    task_digest: str  # the planned task's contract digest (its full digest in older plans)

    @classmethod
    def read(cls, job: JobRecord, result: TrialResult, *, messages: bool) -> _TrialRows:
        paths = JobPaths(Path(job.path)).trial(result.trial_name)
        config = TrialConfig.load_if_readable(paths.config_json)
        agents = _agent_ids(result, config)
        trajectories = _trajectories(paths, agents) if messages else {}
        planned = {task.name: task.contract_digest or task.digest for task in job.tasks}
        digest = planned.get(result.task_name, "")
        return cls(result, paths.root.resolve(), config, trajectories, digest)

    def insert(self, connection: sqlite3.Connection, run_key: int, job_key: int) -> None:
        result = self.result
        info = result.exception_info
        tokens = result.tokens
        cursor = connection.execute(
            "INSERT INTO trials (job_key, run_key, trial_id, trial_name, task_name, short_name,"
            " task_digest, layer, attempt, condition, status, passed, reward, stop_reason, error_type,"
            " error_cause, started_at, finished_at, seconds, agent_active_seconds, input_tokens,"
            " cached_input_tokens, output_tokens, cost_usd, accounting, path)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?)",
            (
                job_key, run_key, result.trial_id, result.trial_name, result.task_name,
                result.short_name, self.task_digest, result.layer, result.attempt,
                result.condition,
                result.status.value, succeeded(result), result.reward,
                result.stop_reason.value if result.stop_reason else None, result.error_type,
                info.exception_type.cause if info else None, result.started_at,
                result.finished_at,
                seconds_between(result.started_at, result.finished_at)
                if result.finished_at else None,
                result.timings.agent_active_seconds,
                tokens.input if tokens else None, tokens.cached_input if tokens else None,
                tokens.output if tokens else None, result.cost_usd, result.accounting.value,
                str(self.path),
            ),
        )  # fmt: skip
        trial_key = _key(cursor)
        connection.executemany(
            "INSERT INTO metrics (trial_key, name, value, passed) VALUES (?, ?, ?, ?)",
            [
                (trial_key, name, value, metric_passed(value))
                for name, value in (result.rewards or {}).items()
            ],
        )
        connection.executemany(
            "INSERT INTO agents (trial_key, agent_id, role, kind, endpoint, model_revision,"
            " transcript_messages) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(trial_key, *row) for row in self._agent_rows()],
        )
        connection.executemany(
            "INSERT INTO costs (trial_key, agent_id, input_tokens, cached_input_tokens,"
            " output_tokens, turns, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (trial_key, agent_id, t.input, t.cached_input, t.output, t.turns, t.cost_usd)
                for agent_id, t in (tokens.per_agent.items() if tokens else ())
            ],
        )
        connection.executemany(
            "INSERT INTO messages (trial_key, agent_id, step_id, timestamp, source, message,"
            " reasoning, tool_calls, n_tool_calls, prompt_tokens, completion_tokens,"
            " cached_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (trial_key, agent_id, *row)
                for agent_id, trajectory in self.trajectories.items()
                for row in _step_rows(trajectory)
            ],
        )

    def _agent_rows(self) -> Iterable[tuple[object, ...]]:
        revisions = (
            {a.agent_id: a.model_revision for a in self.config.roster} if self.config else {}
        )
        buzz_agents = self.result.buzz.agents
        if buzz_agents:
            for agent in buzz_agents:
                yield (
                    agent.agent_id, agent.role, agent.kind, agent.endpoint,
                    revisions.get(agent.agent_id), agent.messages,
                )  # fmt: skip
            return
        # An early setup error leaves no agent list in the result; the roster has the plan.
        for planned in self.config.roster if self.config else ():
            yield (
                planned.agent_id, planned.role, planned.kind, planned.endpoint,
                planned.model_revision, None,
            )  # fmt: skip


def _agent_ids(result: TrialResult, config: TrialConfig | None) -> list[str]:
    ids = [agent.agent_id for agent in result.buzz.agents]
    if ids or config is None:
        return ids
    return [agent.agent_id for agent in config.roster]


def _trajectories(paths: TrialPaths, agent_ids: list[str]) -> dict[str, Trajectory]:
    """Each agent's ATIF trajectory that exists; `DocumentError` for one that is malformed."""
    found = {}
    for agent_id in agent_ids:
        path = paths.trajectory(agent_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as error:
            problem = f"cannot read ({error.strerror or error})"
            raise DocumentError(display_path(path), "", problem) from None
        try:
            found[agent_id] = Trajectory.model_validate_json(data)
        except ValidationError as error:
            first = from_validation_error(display_path(path), error)[0]
            raise DocumentError(first.file, first.field, first.problem) from None
    return found


def _step_rows(trajectory: Trajectory) -> Iterable[tuple[object, ...]]:
    for step in trajectory.steps:
        calls = step.tool_calls or []
        metrics = step.metrics
        yield (
            step.step_id, step.timestamp, step.source, step.message, step.reasoning_content,
            json.dumps([call.model_dump() for call in calls]) if calls else None, len(calls),
            metrics.prompt_tokens if metrics else None,
            metrics.completion_tokens if metrics else None,
            metrics.cached_tokens if metrics else None,
            metrics.cost_usd if metrics else None,
        )  # fmt: skip


def open_sources(sources: list[Path]) -> sqlite3.Connection:
    """One results database file, or run and job directories added to a database in memory
    (without their messages). `DatabaseError` or `DocumentError` with one line otherwise."""
    files = [source for source in sources if source.is_file()]
    if files:
        if len(sources) > 1:
            raise DatabaseError(
                f"{display_path(files[0])}: give one results database, or run and job "
                "directories, not both"
            )
        return open_database(files[0], create=False)
    connection = open_database(Path(":memory:"), create=True)
    for source in sources:
        add_directory(connection, source, messages=False)
    return connection
