"""The results database's tables and views (docs/results-db.md), and opening a database file.

One SQLite file holds any number of runs. Every row hangs off its run by foreign keys with
`ON DELETE CASCADE`, so replacing a run is one `DELETE FROM runs` and its inserts, in one
transaction. The `meta` table records `SCHEMA_VERSION`: a database written under another
version is refused with one line rather than read wrongly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestra.config.errors import display_path
from orchestra.errors import OrchestraError

SCHEMA_VERSION = 2


class DatabaseError(OrchestraError):
    """A database path that cannot be used (exit 1); `str()` is one line naming the file."""


TABLES = """
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE runs (
  run_key INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL UNIQUE,          -- run.json `id` (a lone job: its config's `id`)
  name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('run', 'job')),
  path TEXT NOT NULL,
  created_at TEXT NOT NULL,             -- ISO-8601 UTC; orders runs in time
  condition TEXT NOT NULL,
  manifest_sha256 TEXT NOT NULL,
  environment TEXT NOT NULL,
  orchestrator_version TEXT NOT NULL,
  timeout_multiplier REAL NOT NULL,     -- the run's trial timeouts' multiplier
  added_at TEXT NOT NULL
);
CREATE TABLE jobs (
  job_key INTEGER PRIMARY KEY,
  run_key INTEGER NOT NULL REFERENCES runs ON DELETE CASCADE,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  started INTEGER NOT NULL,             -- 0: planned by the run, its directory never made
  layer TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  n_planned INTEGER NOT NULL,
  condition TEXT NOT NULL,
  manifest_sha256 TEXT NOT NULL,
  oracle INTEGER NOT NULL,
  stopped TEXT,                         -- cost_cap | circuit_breaker | NULL
  stop_message TEXT,
  UNIQUE (run_key, name)
);
CREATE TABLE trials (
  trial_key INTEGER PRIMARY KEY,
  job_key INTEGER NOT NULL REFERENCES jobs ON DELETE CASCADE,
  run_key INTEGER NOT NULL REFERENCES runs ON DELETE CASCADE,
  trial_id TEXT NOT NULL,
  trial_name TEXT NOT NULL,
  task_name TEXT NOT NULL,
  short_name TEXT NOT NULL,
  task_digest TEXT NOT NULL,            -- the task's files without solution/ ('' unknown)
  layer TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  condition TEXT NOT NULL,
  status TEXT NOT NULL,                 -- running | scored | error | cancelled
  passed INTEGER NOT NULL,              -- scored with reward >= 1.0 - 1e-9
  reward REAL,
  stop_reason TEXT,
  error_type TEXT,
  error_cause TEXT,                     -- provider | verifier | internal | cancelled | harness
  started_at TEXT NOT NULL,
  finished_at TEXT,
  seconds REAL,
  agent_active_seconds REAL NOT NULL,
  input_tokens INTEGER,
  cached_input_tokens INTEGER,
  output_tokens INTEGER,
  cost_usd REAL,
  accounting TEXT NOT NULL,
  path TEXT NOT NULL,
  UNIQUE (job_key, trial_name)
);
CREATE TABLE metrics (
  trial_key INTEGER NOT NULL REFERENCES trials ON DELETE CASCADE,
  name TEXT NOT NULL,
  value REAL NOT NULL,
  passed INTEGER NOT NULL,
  PRIMARY KEY (trial_key, name)
);
CREATE TABLE agents (
  trial_key INTEGER NOT NULL REFERENCES trials ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  role TEXT NOT NULL,
  kind TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  model_revision TEXT,                  -- from the trial's config.json roster
  transcript_messages INTEGER,          -- messages it wrote in the channel (NULL: no evidence)
  PRIMARY KEY (trial_key, agent_id)
);
CREATE TABLE costs (
  trial_key INTEGER NOT NULL REFERENCES trials ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  cached_input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  turns INTEGER NOT NULL,
  cost_usd REAL NOT NULL,
  PRIMARY KEY (trial_key, agent_id)
);
CREATE TABLE messages (
  trial_key INTEGER NOT NULL REFERENCES trials ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  step_id INTEGER NOT NULL,
  timestamp TEXT NOT NULL,
  source TEXT NOT NULL,                 -- system | user | agent
  message TEXT NOT NULL,
  reasoning TEXT,
  tool_calls TEXT,                      -- JSON array of {tool_call_id, function_name, arguments}
  n_tool_calls INTEGER NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  cached_tokens INTEGER,
  cost_usd REAL,
  PRIMARY KEY (trial_key, agent_id, step_id)
);
CREATE INDEX trials_by_task ON trials (task_name, run_key);
"""

VIEWS = """
CREATE VIEW task_runs AS
SELECT r.run_key, r.name AS run_name, r.created_at AS run_created_at, t.condition, t.layer,
       t.task_name,
       COUNT(*) AS trials,
       SUM(t.status = 'scored') AS scored,
       SUM(t.passed) AS passed,
       SUM(t.status = 'error') AS errors,
       CAST(SUM(t.passed) AS REAL) / NULLIF(SUM(t.status = 'scored'), 0) AS pass_rate,
       CASE
         WHEN SUM(t.status = 'scored') = 0 THEN 'none'
         WHEN SUM(t.passed) = SUM(t.status = 'scored') THEN 'pass'
         WHEN SUM(t.passed) = 0 THEN 'fail'
         ELSE 'mixed'
       END AS outcome
FROM trials t JOIN runs r USING (run_key)
GROUP BY r.run_key, t.condition, t.layer, t.task_name;

CREATE VIEW run_summary AS
SELECT r.run_key, r.name AS run_name, r.created_at, r.condition,
       COUNT(t.trial_key) AS trials,
       COALESCE(SUM(t.status = 'scored'), 0) AS scored,
       COALESCE(SUM(t.passed), 0) AS passed,
       COALESCE(SUM(t.status = 'error'), 0) AS errors,
       CAST(SUM(t.passed) AS REAL) / NULLIF(SUM(t.status = 'scored'), 0) AS pass_rate,
       COALESCE(SUM(t.cost_usd), 0) AS cost_usd,
       COALESCE(SUM(t.input_tokens), 0) AS input_tokens,
       COALESCE(SUM(t.output_tokens), 0) AS output_tokens
FROM runs r LEFT JOIN trials t USING (run_key)
GROUP BY r.run_key;

CREATE VIEW agent_costs AS
SELECT t.run_key, t.condition, t.task_name, t.trial_name, a.agent_id, a.role, a.endpoint,
       c.input_tokens, c.cached_input_tokens, c.output_tokens, c.turns, c.cost_usd
FROM agents a JOIN trials t USING (trial_key)
LEFT JOIN costs c ON c.trial_key = a.trial_key AND c.agent_id = a.agent_id;
"""


def create_schema(connection: sqlite3.Connection) -> None:
    """Every table and view, and the schema version, in one transaction (`executescript`
    commits whatever is pending first, so the script carries its own BEGIN and COMMIT)."""
    version = f"INSERT INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');"
    connection.executescript(f"BEGIN;{TABLES}{VIEWS}{version}COMMIT;")


def _stored_version(connection: sqlite3.Connection) -> str | None:
    """The database's schema version; None for an empty file (a new database)."""
    names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    if not names:
        return None
    if "meta" not in names:
        raise sqlite3.DatabaseError("no meta table")
    row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("no schema_version in meta")
    return str(row[0])


def open_database(path: Path, *, create: bool) -> sqlite3.Connection:
    """The results database at `path` (`:memory:` too), checked against `SCHEMA_VERSION`;
    with `create`, a missing or empty file gets the schema. `DatabaseError` otherwise."""
    shown = display_path(path)
    if str(path) != ":memory:":
        if path.is_dir():
            raise DatabaseError(f"{shown}: is a directory, not a results database")
        if not create and not path.is_file():
            raise DatabaseError(f"{shown}: no such results database")
    try:
        connection = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as error:
        raise DatabaseError(f"{shown}: cannot open the database ({error})") from None
    try:
        connection.execute("PRAGMA foreign_keys = ON")
        version = _stored_version(connection)
        if version is None and create:
            create_schema(connection)
        elif version is None:
            raise DatabaseError(f"{shown}: an empty file, not a results database")
        elif version != str(SCHEMA_VERSION):
            raise DatabaseError(
                f"{shown}: results database schema version {version}, this orchestra reads "
                f"version {SCHEMA_VERSION} (rebuild it with `orchestra db`)"
            )
    except sqlite3.DatabaseError as error:
        connection.close()
        raise DatabaseError(f"{shown}: not a results database ({error})") from None
    except DatabaseError:
        connection.close()
        raise
    return connection


@contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT, or ROLLBACK when the block raises: all or nothing."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
