"""`just nightly`: the baseline is checked before anything runs, and a
run's comparison lands in its run directory only when the comparison was made."""

import subprocess
import sys
from pathlib import Path

import pytest
from jobs_builder import TrialSpec, build_job

from orchestra.paths import PROJECT_ROOT

JUST = Path(sys.executable).with_name("just")
pytestmark = pytest.mark.skipif(
    not JUST.exists(), reason="`just` comes from the rust-just wheel the README installs"
)
USER_MENTION_PASS = {"reward": 1.0, "answer_correct": 1.0, "user_p_tagged": 1.0}


def nightly(
    tmp_path: Path, baseline: Path, relay_port: int, state_dir: Path
) -> subprocess.CompletedProcess[str]:
    """`state_dir` holds the embedded PostgreSQL: outside pytest's temp tree (`pg_dir`)."""
    return subprocess.run(
        [str(JUST), "nightly", "--baseline", str(baseline), "--jobs-dir", str(tmp_path / "jobs"),
         "-p", "tasks/buzz-native/user-mention", "--stack", "embedded", "--env", "local",
         "--relay-port", str(relay_port), "--state-dir", str(state_dir), "-q"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_missing_baseline_stops_nightly_before_anything_runs(
    tmp_path: Path, free_port: int
) -> None:
    run = nightly(tmp_path, tmp_path / "nope", free_port, tmp_path / "state")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"error: {tmp_path / 'nope'}: no such run or job directory or report file" in run.stderr
    assert not (tmp_path / "jobs").exists() and not (tmp_path / "state").exists()


@pytest.mark.e2e
@pytest.mark.slow
def test_nightly_writes_the_comparison_into_its_run(
    tmp_path: Path, free_port: int, pg_dir: Path
) -> None:
    baseline = build_job(
        tmp_path / "baseline", "base", [TrialSpec("user-mention", rewards=USER_MENTION_PASS)]
    )
    run = nightly(tmp_path, baseline, free_port, pg_dir / "state")
    assert run.returncode == 0, run.stdout + run.stderr
    (run_dir,) = (tmp_path / "jobs").iterdir()
    assert run_dir.name.startswith("nightly-")
    compare = (run_dir / "compare.md").read_text()
    assert compare.startswith("## Benchmark comparison")
    assert "**exit 0: no regression significant at α=0.02" in compare
    assert {p.name for p in run_dir.iterdir()} >= {"run.json", "report.html", run_dir.name}
    assert not list(run_dir.glob("*.tmp"))
