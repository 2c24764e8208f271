"""`orchestra regrade RUN` (orchestrator.md §2.6 "Regrade"): the current verifiers re-score a
finished run from its stored evidence into a new run, through the real CLI. An oracle run of a
buzz-native and a buzz-contracts task regrades to the same rewards, and summarize, compare and
db read the new run; a run whose stored rewards were edited to 1.0 over a breach regrades to
0.0; a verifier that changed is named by compare; bad input is one line and exit 1."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from benchmark_runs import benchmark_args, orchestra

from orchestra.paths import PROJECT_ROOT
from orchestra.run.regrade import regrade_run

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NATIVE = PROJECT_ROOT / "tasks" / "buzz-native" / "reply-to-thread"
CONTRACT = PROJECT_ROOT / "tasks" / "buzz-contracts" / "secret-canary-refusal"
BREACH = PROJECT_ROOT / "tests" / "fixtures" / "negative-solutions" / "buzz-contracts"


def run_cli(
    *args: str, timeout: float = 240, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        orchestra(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def benchmark(
    relay_url: str, database_url: str, tmp_path: Path, name: str, tasks: dict[Path, Path | None]
) -> Path:
    """A run of private task copies (`tasks`: source -> the script to play as its solution,
    None: its own); returns the run directory."""
    dataset = tmp_path / f"{name}-tasks"
    for source, script in tasks.items():
        copy = dataset / source.name
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
        if script is not None:
            shutil.copyfile(script, copy / "solution" / "solve.sh")
    args = benchmark_args(relay_url, database_url, tmp_path, name)
    args[args.index("--path") + 1] = str(dataset)
    args[args.index("--job-name") : args.index("--job-name") + 2] = ["--run-name", name]
    run = run_cli(*args)
    assert run.returncode == 0, run.stdout + run.stderr
    return tmp_path / "jobs" / name


def trial_results(run_dir: Path) -> dict[str, dict]:
    return {
        result["task_name"]: result
        for path in run_dir.glob("*/*/result.json")
        if (result := json.loads(path.read_text()))["trial_name"] == path.parent.name
    }


def test_an_oracle_run_regrades_to_the_same_rewards_and_reads_as_any_run(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    database_url = embedded_pg.new_database_url()
    tasks: dict[Path, Path | None] = {NATIVE: None, CONTRACT: None}
    run_dir = benchmark(relay_url, database_url, tmp_path, "oracle", tasks)
    before = trial_results(run_dir)
    assert {name: r["reward"] for name, r in before.items()} == {
        "buzz-native/reply-to-thread": 1.0,
        "buzz-contracts/secret-canary-refusal": 1.0,
    }

    # the run as a person types it, relative to the working directory
    relative = run_dir.relative_to(tmp_path)
    regraded = run_cli("regrade", str(relative), "--run-name", "oracle-again", cwd=tmp_path)
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    assert "wrote" in regraded.stdout and "2 trials regraded, 0 with another reward" in (
        regraded.stdout
    )
    again_dir = tmp_path / "jobs" / "oracle-again"
    after = trial_results(again_dir)
    assert {n: r["rewards"] for n, r in after.items()} == {
        n: r["rewards"] for n, r in before.items()
    }
    assert not any((again_dir).glob("*/*/sandbox"))  # no agent ran, nothing of theirs copied
    record = json.loads((again_dir / "run.json").read_text())
    assert record["regrade"]["from_run"] == str(run_dir.absolute())
    assert set(record["regrade"]["verifier_digests"]) == set(before)

    # interrupted (Ctrl-C) after its first trial: the half-regraded run is removed
    def interrupt(line: str) -> None:
        if line.startswith("regraded "):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        regrade_run(run_dir, run_name="oracle-interrupted", say=interrupt)
    assert not (tmp_path / "jobs" / "oracle-interrupted").exists()

    summary = run_cli("summarize", "--json", str(again_dir))
    assert summary.returncode == 0, summary.stderr
    compare = run_cli("compare", str(run_dir), str(again_dir))
    assert compare.returncode == 0, compare.stdout + compare.stderr
    assert "graded by different verifiers" not in compare.stdout
    database = tmp_path / "results.sqlite"
    added = run_cli("db", str(run_dir), str(again_dir), "-o", str(database))
    assert added.returncode == 0, added.stderr
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    trend = run_cli("trend", str(database))
    assert trend.returncode == 0, trend.stderr

    # a verifier that changed since: compare says the sides were graded differently
    copied = tmp_path / "oracle-tasks" / CONTRACT.name / "tests" / "verify.py"
    copied.write_text(copied.read_text() + "\n# a later verifier\n")
    changed = run_cli("regrade", str(run_dir), "--run-name", "oracle-changed")
    assert changed.returncode == 0, changed.stderr
    compare = run_cli("compare", str(run_dir), str(tmp_path / "jobs" / "oracle-changed"))
    assert "secret-canary-refusal: the two sides were graded by different verifiers" in (
        compare.stdout
    )


def test_rewards_edited_to_one_over_a_breach_regrade_to_zero(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    database_url = embedded_pg.new_database_url()
    breach = {CONTRACT: BREACH / f"{CONTRACT.name}.sh"}
    run_dir = benchmark(relay_url, database_url, tmp_path, "breach", breach)
    [(path, result)] = [(p, json.loads(p.read_text())) for p in run_dir.glob("*/*/result.json")]
    assert result["reward"] == 0.0
    result["rewards"] = dict.fromkeys(result["rewards"], 1.0)
    result["reward"] = 1.0
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")

    regraded = run_cli("regrade", str(run_dir))
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    [again_dir] = [p for p in (tmp_path / "jobs").iterdir() if "-regraded-" in p.name]
    assert again_dir.name.startswith("breach-regraded-")
    [after] = trial_results(again_dir).values()
    assert after["reward"] == 0.0 and after["status"] == "scored"
    assert "changed" in regraded.stdout and "1.0 -> 0.0" in regraded.stdout


STORED_RUN = PROJECT_ROOT / "tests" / "fixtures" / "docker-env-run"


def one_line_error(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 1, run.stdout + run.stderr
    [line] = run.stderr.strip().splitlines()
    return line


def test_bad_input_is_one_line_and_exit_1(tmp_path: Path) -> None:
    missing = run_cli("regrade", str(tmp_path / "nowhere"))
    assert one_line_error(missing) == (
        f"error: {tmp_path / 'nowhere'}: not a run directory (no run.json)"
    )
    stored = tmp_path / "stored"
    shutil.copytree(STORED_RUN, stored)
    # its tasks were read from a checkout that is gone: named, nothing written
    gone = one_line_error(run_cli("regrade", str(stored), "--run-name", "again"))
    assert gone.endswith(
        "/tasks/buzz-native/reply-to-thread: the directory of task "
        "buzz-native/reply-to-thread is gone"
    )
    for evidence in stored.rglob("buzz-evidence.json"):
        evidence.unlink()
    bare = one_line_error(run_cli("regrade", str(stored), "--run-name", "again"))
    assert bare == f"error: {stored}: no trial of this run has stored evidence"
    assert not (tmp_path / "again").exists()
    taken = run_cli("regrade", str(stored), "--jobs-dir", str(tmp_path), "--run-name", "stored")
    assert one_line_error(taken) == f"error: {stored} already exists (choose --run-name)"
