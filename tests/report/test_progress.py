"""The live progress lines: counts that add up (issue 18, defect 4); a trial's error in the
words of whoever failed (issue 13)."""

from __future__ import annotations

import io

from documents_support import STARTED, trial_result
from rich.console import Console

from orchestra.report.progress import Progress


def test_cancelled_trials_are_not_counted_as_done() -> None:
    console = Console(width=200, record=True, force_terminal=False)
    progress = Progress(console)
    progress.start_job("j", 6, [trial_result("buzz-native/a", trial_name="a1", status="scored")])
    for name, status in (
        ("b1", "running"),
        ("b1", "error"),
        ("c1", "cancelled"),
        ("d1", "running"),
    ):
        progress.trial_update(trial_result("buzz-native/b", trial_name=name, status=status))
    progress.trial_update(trial_result("buzz-native/c", trial_name="c2", status="cancelled"))
    progress.end_job()
    text = console.export_text()
    last = text.rstrip().splitlines()[-1]
    assert last.startswith(
        "j: 2/6 done (1 scored, 1 error), 2 cancelled, 1 running, 1 not started, elapsed "
    ), last
    assert "j: resuming, 1 trial kept" in text


VERIFIER_MESSAGE = (
    "no reward.json or reward.txt in /jobs/j/t/verifier; the verifier exited 7; the end of "
    "verifier/test-stdout.txt:\n  checking the evidence\n  solver exploded"
)


def printed() -> tuple[Progress, io.StringIO]:
    out = io.StringIO()
    progress = Progress(Console(file=out, width=200, color_system=None), quiet=False)
    return progress, out


def test_a_verifiers_output_is_printed_below_the_trials_line() -> None:
    progress, out = printed()
    progress.trial_update(
        trial_result(
            "buzz-native/user-mention",
            status="error",
            exception_info={
                "exception_type": "RewardFileNotFound",
                "exception_message": VERIFIER_MESSAGE,
                "exception_traceback": "Traceback (most recent call last):\n  grading.py\n",
                "occurred_at": STARTED,
                "phase": "verify",
            },
        )
    )
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("error     buzz-native/user-mention #1 (user-mention__1) ")
    assert lines[0].endswith(
        "RewardFileNotFound: no reward.json or reward.txt in /jobs/j/t/verifier; the verifier "
        "exited 7; the end of verifier/test-stdout.txt:"
    )
    assert [line.strip() for line in lines[1:]] == ["checking the evidence", "solver exploded"]
    assert "Traceback" not in out.getvalue()


def test_a_stop_is_printed_with_its_reason() -> None:
    progress, out = printed()
    progress.stopped("cost_cap", "the run's cost reached $1.1000 (--max-cost-usd 0.5)")
    assert out.getvalue() == (
        "stopped   cost_cap: the run's cost reached $1.1000 (--max-cost-usd 0.5); no new trials\n"
    )
