"""`orchestra benchmark` as people run it: in a terminal (a pty) with its live
view and Ctrl-C, through `grep`, into a pipe whose reader is gone. The installed script runs;
the trials are real (oracle, external stack on the test relay, local env)."""

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from benchmark_runs import benchmark_args

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ORCHESTRA = str(Path(sys.executable).parent / "orchestra")
PTY_LIMIT_SECONDS = 240


def in_pty(command: str, cols: int, until: bytes, env: dict[str, str] | None = None):
    """Run `command` (a shell line) in a pty of `cols` columns; on the first output holding
    `until`, type Ctrl-C. Returns (exit code, everything the terminal showed, whether ^C went)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a shell on the pty, as a terminal would start it
        os.environ.pop("COLUMNS", None)  # the terminal's size, not an inherited setting
        os.environ.update(env or {})
        os.execvp("bash", ["bash", "-c", f"stty cols {cols} rows 40; {command}"])
    shown, typed = b"", False
    deadline = time.monotonic() + PTY_LIMIT_SECONDS
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], deadline - time.monotonic())
        if not ready:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: every process holding the pty has exited
            break
        if not data:
            break
        shown += data
        if not typed and until in shown:
            os.write(fd, b"\x03")
            typed = True
    else:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode(errors="replace"))  # no colours
    return os.waitstatus_to_exitcode(status), text, typed


def statuses(job: Path) -> dict[int, str]:
    results = [json.loads(p.read_text()) for p in job.glob("*/result.json")]
    return {r["attempt"]: r["status"] for r in results}


def shell_line(args: list[str]) -> str:
    return " ".join([ORCHESTRA, *(f"'{a}'" for a in args)])


def test_live_view_shows_running_trials_and_an_eta_then_ctrl_c_cancels(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "live")
    args = [a for a in args if a != "-q"] + ["-k", "2"]  # -n 1: #2 runs after #1 finished
    # Ctrl-C once #2 runs (before it, #2 would be left not started rather than cancelled)
    code, shown, typed = in_pty(shell_line(args), 80, b"reply-to-thread #2")
    assert typed, shown[-2000:]
    assert code == 130, shown[-2000:]
    # the live view: the timing line, the counts, a running trial's row (phase, m:ss, label)
    assert re.search(
        r"\n\s*(setup|agent|evidence|verify)\s+\d+:\d\d\s+buzz-native/reply-to-thread #2", shown
    )
    assert re.search(r"elapsed \d+:\d\d, ETA \d+:\d\d · live", shown)
    assert "1/2 done (1 scored, 0 errors), 0 cancelled, 1 running, 0 not started" in shown
    assert "Traceback" not in shown
    assert statuses(tmp_path / "jobs" / "live" / "live") == {1: "scored", 2: "cancelled"}


def test_ctrl_c_through_grep_finishes_the_job_and_lines_stay_whole(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "grep")
    args = [a for a in args if a != "-q"] + ["-k", "2"]
    command = f"{shell_line(args)} | grep --line-buffered -E 'scored|started'"
    # COLUMNS=40 would make a console wrap; off a terminal lines stay whole whatever it says.
    # Ctrl-C once #2 started (before it, #2 would be left not started rather than cancelled).
    code, shown, typed = in_pty(command, 40, b"reply-to-thread #2", env={"COLUMNS": "40"})
    assert typed and code == 130, shown[-2000:]
    assert re.search(
        r"scored +buzz-native/reply-to-thread #1 \(reply-to-thread__\w+\) reward=1\.00\r?\n", shown
    ), shown
    assert "Traceback" not in shown
    assert statuses(tmp_path / "jobs" / "grep" / "grep") == {1: "scored", 2: "cancelled"}


def test_a_closed_pipe_loses_the_output_and_the_run_still_finishes(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "pipe")
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| head -c 0`: the reader is gone before the first line
    try:
        run = subprocess.run(
            [ORCHESTRA, *args], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=240
        )
    finally:
        os.close(write_end)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "BrokenPipeError" not in run.stderr
    assert "note: standard output closed; the run goes on without printing" in run.stderr
    assert statuses(tmp_path / "jobs" / "pipe" / "pipe") == {1: "scored"}
