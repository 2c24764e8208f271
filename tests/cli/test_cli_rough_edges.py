"""The command line's rough edges: every validation error of a manifest or
endpoint config exits 1 (orchestrator.md §2.4), a busy relay port leaves no run behind, and the
summary after a run points at a command that exists."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from benchmark_runs import benchmark_args, orchestra
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.paths import PROJECT_ROOT


@pytest.fixture(autouse=True)
def repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT_ROOT)


def copied_manifest(tmp_path: Path) -> str:
    copy = tmp_path / "copy" / "m.yaml"
    copy.parent.mkdir()
    shutil.copy(PROJECT_ROOT / "manifests/buzz-native-solo-oracle.yaml", copy)
    return str(copy)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ("manifests/buzz-native-solo-luna.yaml", 'endpoint "gpt-5.6-luna" is not in'),
        (None, "roster[0].prompt.path: file not found"),
    ],
)
def test_a_condition_that_does_not_validate_exits_1_before_anything_runs(
    tmp_path: Path, manifest: str | None, message: str
) -> None:
    jobs = tmp_path / "jobs"
    result = CliRunner().invoke(
        app,
        ["benchmark", "-p", "tasks/buzz-native/user-mention", "--stack", "embedded",
         "--env", "local", "--jobs-dir", str(jobs), "--state-dir", str(tmp_path / "state"),
         "--manifest", manifest or copied_manifest(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    assert message in result.stderr
    assert not jobs.exists()


def test_a_busy_relay_port_creates_no_run_and_prints_no_resume_line(
    tmp_path: Path, free_port: int, pg_dir: Path
) -> None:
    jobs = tmp_path / "jobs"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", free_port))
        holder.listen()
        result = CliRunner().invoke(
            app,
            ["benchmark", "-p", "tasks/buzz-native/user-mention", "--stack", "embedded",
             "--env", "local", "--relay-port", str(free_port), "--jobs-dir", str(jobs),
             "--state-dir", str(pg_dir / "state")],
        )  # fmt: skip
    assert result.exit_code == 2, result.stderr
    assert f"error: 127.0.0.1:{free_port} is in use by " in result.stderr
    assert "resume" not in result.stdout + result.stderr
    assert not jobs.exists()


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def unwrapped(text: str) -> str:
    """The text without colours and whitespace: a 70-column terminal wraps the long lines."""
    return re.sub(r"\s", "", ANSI.sub("", text))


@pytest.mark.e2e
def test_the_summary_after_a_run_names_the_command_that_shows_every_column(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    """`--json` is an option of `summarize`, not of `benchmark`: after a run the footer of a
    summary too narrow for every column names the whole command."""
    narrow = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "70"}  # a 70-column terminal
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "narrow")
    run = subprocess.run(orchestra(*args), capture_output=True, text=True, timeout=240, env=narrow)
    assert run.returncode == 0, run.stdout + run.stderr
    out = unwrapped(run.stdout)
    run_dir = tmp_path / "jobs" / "narrow"
    assert unwrapped(f"(orchestra summarize --json {run_dir} has every column)") in out, out
    assert unwrapped("(--json has every column)") not in out
    summarized = subprocess.run(
        orchestra("summarize", str(run_dir)), capture_output=True, text=True, env=narrow
    )
    assert unwrapped("(--json has every column)") in unwrapped(summarized.stdout)
