"""The tamper suite in the local env: one real job over the tampered tasks' copies
(tests/tamper_support.py), each trial's verdict exactly what its relay evidence earns, the
tampering named in trial.log where the local env can see it.

The job runs with a scratch directory named `tamper-path-bin` first on PATH (agents of the local
env inherit the orchestrator's PATH, so that is where replace-interpreters.sh plants its `python3`,
`sh` and `mkdir`); edit-tests.sh rewrites the task copy's own `tests/verify.py`. The job runs the
local env unsandboxed (`sandbox: none`, `ORCHESTRA_BWRAP` empty): the verifier's own defences are
what is tested, where agents can reach the trial's directories (in the bubblewrap sandbox they
cannot see them at all: tests/trial/env/test_sandbox_escapes.py). Unconfined agents run as this
user (root in CI), so the whole job, like every other run of a tamper script here, runs with the
host read-only but for the scratch directory (`read_only_host`): whatever the scripts try,
nothing outside a temporary copy can change.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from e2e_jobs import JobRun
from tamper_support import (
    DATASET,
    TAMPER_LIB,
    TAMPER_PATH_DIR_NAME,
    TamperSolution,
    read_only_host,
    tamper_dataset,
    tamper_problems,
    tamper_solutions,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SOLUTIONS = tamper_solutions()


@pytest.fixture(scope="module")
def path_dir(scratch: Path) -> Path:
    directory = scratch / TAMPER_PATH_DIR_NAME
    directory.mkdir()
    return directory


@pytest.fixture(scope="module")
def tamper_job(run_job, scratch: Path, path_dir: Path, relay_url: str, embedded_pg) -> JobRun:
    tasks = tamper_dataset(scratch / "tamper-tasks")
    stack = ["--stack", "external", "--relay-url", relay_url]
    database = ["--database-url", embedded_pg.new_database_url()]
    (scratch / "tmp").mkdir()
    environ = {
        **os.environ,
        "PATH": f"{path_dir}{os.pathsep}{os.environ['PATH']}",
        "TMPDIR": str(scratch / "tmp"),
        "ORCHESTRA_BWRAP": "",
    }
    confined = read_only_host([scratch])
    return run_job(tasks, "tamper-solutions", *stack, *database, env=environ, prefix=confined)


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda solution: solution.name)
def test_outside_a_trial_a_tamper_solution_refuses_to_run(
    solution: TamperSolution, tmp_path: Path
) -> None:
    """They write wherever a verifier could look; nowhere but in a trial may they start."""
    copy = tmp_path / "solution"
    copy.mkdir()
    shutil.copyfile(TAMPER_LIB, copy / "tamper-lib.sh")
    shutil.copyfile(solution.script, copy / "solve.sh")
    (copy / "honest.sh").write_text("touch honest-ran\n")
    home = tmp_path / "home"
    home.mkdir()
    environ = {"PATH": os.environ["PATH"], "HOME": str(home)}
    run = subprocess.run(
        [*read_only_host([tmp_path]), "bash", str(copy / "solve.sh")],
        cwd=home,
        env=environ,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 3 and "refusing" in run.stderr, run.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == [
        "home", "honest.sh", "solution", "solve.sh", "tamper-lib.sh"
    ]  # fmt: skip


def test_each_solution_tampers_with_a_task_of_its_own() -> None:
    tasks = [solution.task for solution in SOLUTIONS]
    assert len(SOLUTIONS) == 6 and len(set(tasks)) == len(tasks)


def test_every_tampered_trial_is_scored(tamper_job: JobRun, record_property) -> None:
    record_property("job_wall_seconds", round(tamper_job.wall_seconds, 1))
    assert tamper_job.returncode == 0, tamper_job.output
    statuses = {name: result["status"] for name, result in tamper_job.results.items()}
    assert statuses == {solution.task: "scored" for solution in SOLUTIONS}, tamper_job.output
    assert {result["sandbox"] for result in tamper_job.results.values()} == {"none"}


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda solution: solution.name)
def test_the_verdict_is_what_the_evidence_earns(
    tamper_job: JobRun, solution: TamperSolution
) -> None:
    result = tamper_job.results.get(solution.task)
    assert result is not None, tamper_job.output
    trial_log = (tamper_job.job_dir / result["trial_name"] / "trial.log").read_text()
    assert tamper_problems(solution, result, trial_log, "local") == [], trial_log


def test_the_tampering_the_log_cannot_show_did_happen(
    tamper_job: JobRun, path_dir: Path, scratch: Path
) -> None:
    """The plants the local env cannot notice were there for the verifier to (not) pick up."""
    assert sorted(p.name for p in path_dir.iterdir()) == ["mkdir", "python3", "sh"]
    startup = tamper_job.results["multiline-message"]
    sandbox = tamper_job.job_dir / startup["trial_name"] / "sandbox"
    assert list(sandbox.glob("root/.local/lib/python3*/site-packages/usercustomize.py"))
    assert (sandbox / "workspace" / "sitecustomize.py").is_file()
    original = (DATASET / "reply-to-thread" / "tests" / "verify.py").read_bytes()
    edited = scratch / "tamper-tasks" / "reply-to-thread" / "tests" / "verify.py"
    assert edited.read_bytes() != original
