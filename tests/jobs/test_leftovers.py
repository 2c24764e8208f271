"""A job its orchestrator left behind (orchestra.jobs.leftovers; orchestrator.md §2.5)."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from documents_support import job_config, trial_result

from orchestra.documents.enums import ErrorType, TrialStatus
from orchestra.documents.trial import TrialResult
from orchestra.jobs.layout import take_inventory
from orchestra.jobs.leftovers import (
    JobInUse,
    abandoned_jobs,
    check_job_free,
    claim_job,
    reap_job,
    reap_jobs_dir,
)
from orchestra.locks import OwnerLock
from orchestra.paths import JobPaths

TASK = "buzz-native/user-mention"


def lost_job(root: Path, name: str = "job") -> tuple[JobPaths, Path, subprocess.Popen[bytes]]:
    """A job whose holder died (its pid left in `.lock`) with one trial `running` in phase
    agent, and a process that escaped that trial's tree (HOME in its sandbox, own session)."""
    paths = JobPaths(root / name)
    paths.root.mkdir(parents=True)
    job_config(name).write(paths.config_json)
    paths.lock.write_text("999999999\n")
    trial = paths.root / "user-mention__aaaaaaa"
    (trial / "sandbox" / "root").mkdir(parents=True)
    trial_result(TASK, trial_name=trial.name, phase="agent").write(trial / "result.json")
    escaped = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={**os.environ, "HOME": str(trial / "sandbox" / "root")},
        start_new_session=True,
    )
    return paths, trial, escaped


def test_a_lost_trial_is_reaped_marked_and_rerun(tmp_path: Path) -> None:
    paths, trial, escaped = lost_job(tmp_path)
    try:
        lines: list[str] = []
        lock = claim_job(paths)
        assert asyncio.run(reap_job(paths, lines.append)) == [trial.name]
        assert escaped.wait(10) == -9
        lost = TrialResult.load(trial / "result.json")
        assert lost.status is TrialStatus.ERROR and lost.finished_at is not None
        assert lost.exception_info is not None and lost.exception_info.phase == "agent"
        assert lost.exception_info.exception_type is ErrorType.ORCHESTRATOR_LOST
        assert any("killed 1 leftover process" in line for line in lines), lines
        # re-run even where errors are kept: it measured nothing
        inventory = take_inventory(paths, [(1, TASK)], keep_errors=True)
        assert inventory.owed == [(1, TASK)] and inventory.superseded == [trial.name]
        lock.release()
    finally:
        escaped.kill()
        escaped.wait()


def test_a_job_another_process_runs_is_refused(tmp_path: Path) -> None:
    paths = JobPaths(tmp_path / "job")
    holder = OwnerLock(paths.lock)
    assert holder.acquire()
    holder.claim()
    with pytest.raises(JobInUse, match=rf"job job is being run by .* \(pid {os.getpid()}\)"):
        check_job_free(paths)
    with pytest.raises(JobInUse):
        claim_job(paths)
    holder.release()
    check_job_free(paths)
    claim_job(paths).release()


def test_benchmark_ends_the_leftovers_of_other_dead_jobs_only(tmp_path: Path) -> None:
    """A dead job inside a run is found; this command's own job (one from before runs) is
    left to it."""
    _, trial, escaped = lost_job(tmp_path / "run", "dead")
    (tmp_path / "run" / "run.json").write_text("{}", encoding="utf-8")
    own, _, mine = lost_job(tmp_path, "mine")
    try:
        skip = {own.root}
        assert [found.name for found, _ in abandoned_jobs(tmp_path, skip=skip)] == ["dead"]
        notes = asyncio.run(reap_jobs_dir(tmp_path, skip=skip))
        assert escaped.wait(10) == -9 and mine.poll() is None
        assert notes == [f"dead: {trial.name}: killed 1 leftover process(es): [{escaped.pid}]"]
        # its documents are left to its own resume
        assert TrialResult.load(trial / "result.json").status is TrialStatus.RUNNING
    finally:
        for process in (escaped, mine):
            process.kill()
            process.wait()
