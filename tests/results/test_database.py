"""`orchestra db`: what each table holds, replacing a run or a job, all-or-nothing adds, the
schema version, and one-line errors for bad input."""

import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.documents.io import DocumentError
from orchestra.documents.run import RunRecord
from orchestra.documents.trial import TrialResult
from orchestra.paths import JobPaths, RunPaths
from orchestra.results.database import add_directory
from orchestra.results.schema import SCHEMA_VERSION, DatabaseError, open_database


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def counts(connection: sqlite3.Connection) -> dict[str, int]:
    tables = ("runs", "jobs", "trials", "metrics", "agents", "costs", "messages")
    return {t: connection.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}


def the_job(run: Path) -> Path:
    record = RunRecord.load(RunPaths(run).run_json)
    return RunPaths(run).job(record.jobs[0].job_name).root


def test_the_tables_hold_every_run_job_trial_metric_agent_cost_and_step(
    results_db: sqlite3.Connection,
) -> None:
    assert counts(results_db) == {
        "runs": 3, "jobs": 3, "trials": 15, "metrics": 28, "agents": 15, "costs": 15,
        "messages": 3,
    }  # fmt: skip
    assert results_db.execute("SELECT value FROM meta").fetchall() == [(str(SCHEMA_VERSION),)]
    error = results_db.execute(
        "SELECT status, passed, reward, error_type, error_cause FROM trials"
        " WHERE task_name = 'buzz-native/memory-retrieval' ORDER BY started_at, run_key"
    ).fetchall()[0]
    assert error == ("error", 0, None, "AgentReadinessTimeout", "harness")
    step = results_db.execute(
        "SELECT agent_id, source, n_tool_calls, prompt_tokens, cost_usd FROM messages"
        " WHERE step_id = 3"
    ).fetchone()
    assert step == ("solo-1", "agent", 2, 1200, 0.0012)
    agent = results_db.execute("SELECT role, kind, endpoint, model_revision FROM agents").fetchone()
    assert agent == ("solo", "orchestrator", "oracle", "oracle")


def test_adding_a_run_again_replaces_its_rows(
    results_db: sqlite3.Connection, three_runs: list[Path], tmp_path: Path
) -> None:
    run = tmp_path / "nightly-3"
    shutil.copytree(three_runs[2], run)
    job = JobPaths(the_job(run))
    trial = sorted(p for p in job.root.iterdir() if p.name.startswith("reply-to-thread"))[0]
    result = TrialResult.load(job.trial(trial.name).result_json)
    passing = {"reward": 1.0, "answer_correct": 1.0}
    result.model_copy(update={"reward": 1.0, "rewards": passing}).write(
        job.trial(trial.name).result_json
    )
    before = counts(results_db)
    assert add_directory(results_db, run) == 5
    assert counts(results_db) == before
    passed = results_db.execute(
        "SELECT passed FROM task_runs WHERE run_name = 'nightly-3'"
        " AND task_name = 'buzz-native/reply-to-thread'"
    ).fetchone()
    assert passed == (1,)
    assert results_db.execute("SELECT path FROM runs WHERE name = 'nightly-3'").fetchone() == (
        str(run.resolve()),
    )


def test_adding_a_job_of_a_run_replaces_only_that_job(
    results_db: sqlite3.Connection, three_runs: list[Path]
) -> None:
    before = counts(results_db)
    keys = results_db.execute("SELECT run_key, job_key FROM jobs ORDER BY run_key").fetchall()
    add_directory(results_db, the_job(three_runs[0]))
    assert counts(results_db) == before
    after = results_db.execute("SELECT run_key, job_key FROM jobs ORDER BY run_key").fetchall()
    assert [run for run, _ in after] == [run for run, _ in keys]
    assert after[0][1] != keys[0][1] and after[1:] == keys[1:]


def test_a_malformed_trial_changes_nothing(
    results_db: sqlite3.Connection, three_runs: list[Path], tmp_path: Path
) -> None:
    run = tmp_path / "nightly-2"
    shutil.copytree(three_runs[1], run)
    job = the_job(run)
    trial = sorted(p for p in job.iterdir() if p.name.startswith("user-mention"))[0]
    (trial / "result.json").write_text('{"schema_version": 1, "status": "lost"}')
    before = results_db.execute("SELECT * FROM trials ORDER BY trial_key").fetchall()
    with pytest.raises(DocumentError, match=r"result\.json: "):
        add_directory(results_db, run)
    assert results_db.execute("SELECT * FROM trials ORDER BY trial_key").fetchall() == before


def test_the_command_adds_runs_and_reports_each(three_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "results.sqlite"
    code, stdout, stderr = invoke("db", *map(str, three_runs), "-o", str(out))
    assert code == 0, stderr
    assert stdout.count(": 5 trials\n") == 3 and stdout.endswith(f"wrote {out}\n")
    code, _, _ = invoke("db", str(three_runs[0]), "-o", str(out))
    connection = open_database(out, create=False)
    assert counts(connection)["runs"] == 3
    connection.close()


def test_a_database_of_another_schema_version_is_refused_in_one_line(
    three_runs: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "results.sqlite"
    open_database(out, create=True).close()
    with sqlite3.connect(out) as connection:
        connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    connection.close()
    for args in (("db", str(three_runs[0]), "-o", str(out)), ("trend", str(out))):
        code, stdout, stderr = invoke(*args)
        assert (code, stdout) == (1, "")
        assert stderr == (
            f"error: {out}: results database schema version 99, this orchestra reads "
            f"version {SCHEMA_VERSION} (rebuild it with `orchestra db`)\n"
        )


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda tmp: tmp / "nope", "no such run or job directory"),
        (lambda tmp: tmp, "not a run or job directory (no run.json or config.json)"),
    ],
)
def test_a_directory_that_is_not_a_run_or_job_is_one_line(
    make: object, problem: str, tmp_path: Path
) -> None:
    source = make(tmp_path)  # type: ignore[operator]
    code, _, stderr = invoke("db", str(source), "-o", str(tmp_path / "r.sqlite"))
    assert (code, stderr) == (1, f"error: {source}: {problem}\n")


def test_an_unusable_database_path_is_one_line(three_runs: list[Path], tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just some words that fill a page\n" * 20)
    cases = {
        tmp_path: f"error: {tmp_path}: is a directory, not a results database\n",
        text: f"error: {text}: not a results database (file is not a database)\n",
    }
    for path, line in cases.items():
        code, _, stderr = invoke("db", str(three_runs[0]), "-o", str(path))
        assert (code, stderr) == (1, line)
    missing = tmp_path / "no-such-dir" / "r.sqlite"
    code, _, stderr = invoke("db", str(three_runs[0]), "-o", str(missing))
    assert code == 1 and stderr.startswith(f"error: {missing}: cannot open the database")
    with pytest.raises(DatabaseError, match="no such results database"):
        open_database(tmp_path / "absent.sqlite", create=False)


def test_a_job_outside_any_run_is_a_run_of_its_own(tmp_path: Path) -> None:
    from jobs_builder import TrialSpec, build_job

    job = build_job(tmp_path / "jobs", "lone", [TrialSpec("user-mention", rewards={"reward": 1.0})])
    connection = open_database(Path(":memory:"), create=True)
    assert add_directory(connection, job) == 1
    assert add_directory(connection, job) == 1  # again: replaced, not doubled
    assert connection.execute("SELECT name, kind FROM runs").fetchall() == [("lone", "job")]
    assert connection.execute("SELECT run_name, passed FROM task_runs").fetchall() == [("lone", 1)]


def test_a_malformed_trajectory_is_named_in_one_line(
    three_runs: list[Path], tmp_path: Path
) -> None:
    run = tmp_path / "nightly-3"
    shutil.copytree(three_runs[2], run)
    (trajectory,) = run.glob("*/*/agent/buzz/solo-1.trajectory.json")
    trajectory.write_text('{"schema_version": "ATIF-v1.6", "steps": []}')
    code, _, stderr = invoke("db", str(run), "-o", str(tmp_path / "r.sqlite"))
    assert code == 1
    assert stderr.startswith(f"error: {trajectory}: ") and stderr.count("\n") == 1
