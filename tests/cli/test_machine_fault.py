"""A full disk ends a run like an interrupt (docs/decisions.md D84): one line naming the path and
the error, the resume command last, exit 130, nothing lost (the resume finishes the plan).

The fault is injected without root: the command runs in a fresh interpreter whose `os.replace`
fails with ENOSPC for the job's `result.json` from its second write on (the first is the job's
start; the second comes once its trial runs), as a filesystem that filled up mid-run would.
"""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_runs import benchmark_args

from orchestra.paths import PROJECT_ROOT

pytestmark = [pytest.mark.e2e]

FULL_DISK = """
import errno, os, sys
from pathlib import Path

target = Path(sys.argv.pop(1))
writes = 0
real_replace = os.replace

def replace(source, destination, *args, **kwargs):
    global writes
    if Path(destination) == target:
        writes += 1
        if writes >= 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(destination))
    return real_replace(source, destination, *args, **kwargs)

os.replace = replace
sys.argv[0] = "orchestra"
from orchestra.cli.main import main
main()
"""


def test_a_full_disk_ends_the_run_with_one_line_and_the_resume_command(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    database_url = embedded_pg.new_database_url()
    args = benchmark_args(relay_url, database_url, tmp_path, "full")
    job_result = tmp_path / "jobs" / "full" / "full" / "result.json"
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(job_result), *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 130, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert errors == [f"error: cannot write {job_result}: No space left on device"], lines
    assert "Traceback" not in done.stderr
    assert lines[-2] == "the plan is not finished; to resume it:"
    resume = shlex.split(lines[-1])
    assert resume[:3] == ["orchestra", "resume", str(tmp_path / "jobs" / "full")], lines
    masked = resume.index("--database-url") + 1  # the password is the user's to give
    resume[masked] = database_url

    finished = subprocess.run(
        [sys.executable, "-c", "from orchestra.cli.main import main; main()", *resume[1:]],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    document = json.loads(job_result.read_text())
    assert document["stats"]["n_scored"] == 1 and document["finished_at"] is not None
