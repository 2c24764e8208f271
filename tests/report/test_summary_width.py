"""The terminal summary fits its terminal: no row wraps at 60, 80 or 120
columns, failing dimensions move to a line of their own, a pipe gets the full table."""

import io
import os
import pty
import re
import sys
from pathlib import Path

import pytest
from jobs_builder import build_job
from report_samples import sample_trials
from rich.console import Console

from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.layout import load_job_record
from orchestra.report.text.summary import render_summary
from orchestra.report.text.table import shared_prefix

ORCHESTRA = str(Path(sys.executable).parent / "orchestra")
FULL_HEADER = "Failing dimensions  Tokens in/out"


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return build_job(tmp_path / "jobs", "sample-job", sample_trials(), attempts=2)


def rendered(job: Path, width: int | None) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=width or 80, soft_wrap=width is None, color_system=None)
    render_summary(aggregate([load_job_record(job)]), console, width)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_no_line_is_wider_than_the_terminal(job: Path, width: int) -> None:
    lines = rendered(job, width)
    assert max(len(line) for line in lines) <= width
    assert any("user-mention" in line for line in lines)


def test_narrow_terminals_put_failing_dimensions_on_their_own_line(job: Path) -> None:
    lines = rendered(job, 80)
    row = next(i for i, line in enumerate(lines) if line.strip().startswith("user-mention"))
    assert lines[row + 1].strip() == "failing dimensions: user_p_tagged×1"
    assert not any(FULL_HEADER in line for line in lines)


def test_without_a_terminal_the_full_table_is_printed_unwrapped(job: Path) -> None:
    lines = rendered(job, None)
    [header] = [line for line in lines if line.startswith("Layer")]
    assert FULL_HEADER in header and "Mean time" in header
    assert not any(line.startswith("not shown at this width") for line in lines)


def test_the_dataset_prefix_is_shared_only_when_every_task_has_it() -> None:
    assert shared_prefix(["buzz-native/a", "buzz-native/b"]) == "buzz-native/"
    assert shared_prefix(["buzz-native/a", "other/b"]) == ""


@pytest.mark.parametrize("columns", [40, 60, 80, 120])
def test_summarize_in_a_real_terminal(job: Path, columns: int) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: the installed script on a pty of `columns` columns
        os.environ.pop("COLUMNS", None)  # the terminal's size, not an inherited setting
        os.execvp(
            "bash", ["bash", "-c", f"stty cols {columns} rows 40; {ORCHESTRA} summarize {job}"]
        )
    shown = b""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child has exited and closed the pty
            break
        if not data:
            break
        shown += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode())
    lines = text.replace("\r\n", "\n").splitlines()
    assert max(len(line) for line in lines) <= columns, text
    assert any(re.match(r"\s*\(condition\)\s+6\s", line) for line in lines), text
