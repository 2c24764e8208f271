"""A run written before `RunConfig` (tests/fixtures/run-before-run-config: one oracle trial of
user-mention, made by the code of 41a6d7d with `--layer regression -k 1 -i '*mention*'
--run-name old-run --stack embedded --env local --relay-port 3611`, its large logs trimmed)
still summarizes, reports, compares and resumes: its `run.json` keeps the selection beside the
settings and the trial knobs at the top level, its `config.json` the old `options`."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.documents.enums import EnvKind, StackMode
from orchestra.documents.job import JobConfig
from orchestra.documents.run import RunRecord
from orchestra.paths import PROJECT_ROOT

FIXTURE = PROJECT_ROOT / "tests" / "fixtures" / "run-before-run-config"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    """The fixture's run under tmp_path/jobs, its placeholders made this checkout's paths."""
    jobs = tmp_path / "jobs"
    shutil.copytree(FIXTURE, jobs)
    places = {
        "@PROJECT_ROOT@": str(PROJECT_ROOT),
        "@STATE_DIR@": str(tmp_path / "state"),
        "@JOBS_DIR@": str(jobs),
    }
    for path in jobs.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".log", ".jsonl", ".sh"):
            text = path.read_text(encoding="utf-8")
            for placeholder, value in places.items():
                text = text.replace(placeholder, value)
            path.write_text(text, encoding="utf-8")
    return jobs / "old-run"


def test_the_old_documents_read_as_a_run_config(old_run: Path) -> None:
    record = RunRecord.load(old_run / "run.json")
    config = record.settings
    assert (config.n_concurrent, config.relay_port, config.stack, config.env) == (
        4, 3611, StackMode.EMBEDDED, EnvKind.LOCAL,
    )  # fmt: skip
    assert config.selection.include == ["*mention*"] and config.selection.attempts == 1
    assert config.selection.paths == [PROJECT_ROOT / "tasks" / "buzz-native"]  # one `path`
    assert config.trial.settle_ms == 250 and config.trial.timeout_multiplier == 1.0
    job = JobConfig.load(old_run / "old-run" / "config.json")
    assert job.options.n_concurrent == 4 and job.options.trial.keep_channels is False


def test_an_old_run_summarizes_reports_and_compares(old_run: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    summary = runner.invoke(app, ["summarize", "--json", str(old_run)])
    assert summary.exit_code == 0, summary.output
    totals = json.loads(summary.stdout)["conditions"][0]["totals"]
    assert (totals["scored"], totals["pass_rate"]) == (1, 1.0), totals
    report = runner.invoke(app, ["report", str(old_run), "--out-dir", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    assert (tmp_path / "report" / "report.json").is_file()
    compared = runner.invoke(app, ["compare", str(old_run), str(old_run)])
    assert compared.exit_code == 0, compared.output


@pytest.mark.e2e
def test_an_old_run_resumes(old_run: Path, relay_url: str, tmp_path: Path) -> None:
    """Its one trial removed, `resume` runs it again as the run recorded it (on the session's
    relay: an external stack given on the command line)."""
    (trial,) = (old_run / "old-run").glob("user-mention__*")
    shutil.rmtree(trial)
    command = [sys.executable, "-c", "from orchestra.cli.main import main; main()", "resume",
               str(old_run), "--stack", "external", "--relay-url", relay_url, "-q"]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = (old_run / "old-run").glob("user-mention__*/result.json")
    assert json.loads(result.read_text())["status"] == "scored"
    record = json.loads((old_run / "run.json").read_text())
    assert len(record["resumes"]) == 1 and record["settings"]["selection"]["include"] == [
        "*mention*"
    ]
