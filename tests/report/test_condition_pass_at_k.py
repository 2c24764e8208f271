"""The condition row's pass@k: one k over the tasks that reach it, with its interval (the
layers' pass@k may use different k, so it is not their mean); it was "—" before."""

from __future__ import annotations

import io
from pathlib import Path

from jobs_builder import TrialSpec, build_job
from rich.console import Console

from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.layout import load_job_record
from orchestra.report.text.summary import render_summary


def test_the_condition_row_shows_pass_at_k_with_its_interval(tmp_path: Path) -> None:
    job = build_job(
        tmp_path,
        "two",
        [TrialSpec("user-mention", rewards={"reward": 1.0}),
         TrialSpec("reply-to-thread", rewards={"reward": 0.0})],
    )  # fmt: skip
    out = io.StringIO()
    render_summary(aggregate([load_job_record(job)]), Console(file=out, width=400), 400)
    row = next(line for line in out.getvalue().splitlines() if "(condition)" in line)
    # pass@k and pass^k; two tasks estimate no spread (t with 1 degree of freedom)
    assert row.count("0.50 [0.00, 1.00] (k=1, 2 tasks)") == 2
