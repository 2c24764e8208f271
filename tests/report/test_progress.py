"""The live progress lines: counts that add up; a trial's error in the words of
whoever failed."""

from __future__ import annotations

import io

from documents_support import STARTED, trial_result
from rich.console import Console

from orchestra.report.text.progress import Progress


def test_cancelled_trials_are_not_counted_as_done() -> None:
    console = Console(width=200, record=True, force_terminal=False)
    progress = Progress(console)
    progress.start_job("j", 6, [trial_result("buzz-native/a", trial_name="a1", status="scored")])
    for name, attempt, status in (
        ("b1", 1, "running"),
        ("b1", 1, "error"),
        ("c1", 2, "cancelled"),
        ("d1", 3, "running"),
    ):
        progress.trial_update(
            trial_result("buzz-native/b", attempt, trial_name=name, status=status)
        )
    progress.trial_update(trial_result("buzz-native/c", trial_name="c2", status="cancelled"))
    progress.end_job()
    text = console.export_text()
    last = text.rstrip().splitlines()[-1]
    assert last.startswith(
        "j: 2/6 done (1 scored, 1 error), 2 cancelled, 1 running, 1 not started, elapsed "
    ), last
    assert "j: resuming, 1 trial kept" in text


def test_a_retried_attempt_replaces_the_one_it_supersedes() -> None:
    """`--retries`: the rerun of a slot is a new trial directory, but the same planned trial;
    counting both made a 4-trial job show `6/4 done`."""
    console = Console(width=200, record=True, force_terminal=False)
    progress = Progress(console)
    progress.start_job("j", 2, [])
    for name, attempt, status in (
        ("a__1", 1, "error"),  # superseded by the rerun below
        ("a__1-retry", 1, "running"),
        ("a__1-retry", 1, "scored"),
        ("a__2", 2, "scored"),
    ):
        progress.trial_update(
            trial_result("buzz-native/a", attempt, trial_name=name, status=status)
        )
    progress.end_job()
    last = console.export_text().rstrip().splitlines()[-1]
    assert last.startswith("j: 2/2 done (2 scored, 0 errors), 0 cancelled, 0 running, "), last


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


def test_confirmation_attempts_are_labelled_and_counted_apart() -> None:
    """`--confirm-against`: attempts beyond the job's k are confirmation attempts."""
    console = Console(width=200, record=True, force_terminal=False)
    progress = Progress(console)
    progress.start_job("j", 2, [], attempts=1)
    for task, attempt in (("a", 1), ("b", 1), ("a", 2)):
        progress.trial_update(
            trial_result(f"buzz-native/{task}", attempt, status="scored", reward=1.0)
        )
    progress.end_job()
    lines = console.export_text().rstrip().splitlines()
    assert any(line.startswith("scored    buzz-native/a #2 (confirmation) (") for line in lines)
    assert not any("buzz-native/b #1 (confirmation)" in line for line in lines)
    assert lines[-1].startswith("j: 3/3 done (3 scored, 0 errors)"), lines[-1]
    assert "(with 1 confirmation attempt)" in lines[-1]


def test_a_rerun_slot_prints_one_final_line_and_counts_once() -> None:
    """The attempt that is rerun is a `retrying` line, not a final `error` line with
    the counter at 0 errors, and the rerun does not print a second `started` line."""
    progress, out = printed()
    progress.start_job("j", 1, [])
    info = {
        "exception_type": "ProviderUnavailable",
        "exception_message": "endpoint e: HTTP 500: agent solo gave up a turn",
        "exception_traceback": "",
        "occurred_at": STARTED,
        "phase": "agent",
    }
    progress.trial_update(trial_result("buzz-native/a", trial_name="a__1", status="running"))
    failed = trial_result("buzz-native/a", trial_name="a__1", status="error", exception_info=info)
    progress.rerunning(failed, 1, 1)
    assert progress._counts().startswith("0/1 done (0 scored, 0 errors), 0 cancelled, 1 running")
    rerun = trial_result("buzz-native/a", trial_name="a__2", status="running")
    progress.trial_update(rerun)
    progress.trial_update(
        trial_result("buzz-native/a", trial_name="a__2", status="error", exception_info=info)
    )
    progress.end_job()
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["started", "retrying", "error", "j:"]
    assert lines[1] == (
        "retrying  buzz-native/a #1 (a__1) ProviderUnavailable: endpoint e: HTTP 500: agent solo "
        "gave up a turn; rerun 1/1"
    )
    assert lines[3].startswith("j: 1/1 done (0 scored, 1 error), 0 cancelled, 0 running")


def test_an_agents_provider_retry_is_one_line_per_retry_and_quiet_prints_none() -> None:
    """While buzz-agent retries a failing provider call, the trial's line says so."""
    progress, out = printed()
    progress.trial_update(trial_result("buzz-native/a", trial_name="a__1", status="running"))
    progress.provider_retrying("a__1", "provider HTTP 500, 1/4")
    progress.provider_retrying("a__1", "provider HTTP 500, 2/4")
    progress.provider_retrying("gone__1", "provider HTTP 500, 1/4")  # not running here: no line
    assert out.getvalue().splitlines()[1:] == [
        "retrying  buzz-native/a #1 (provider HTTP 500, 1/4)",
        "retrying  buzz-native/a #1 (provider HTTP 500, 2/4)",
    ]
    quiet_out = io.StringIO()
    quiet = Progress(Console(file=quiet_out, width=200, color_system=None), quiet=True)
    quiet.trial_update(trial_result("buzz-native/a", trial_name="a__1", status="running"))
    quiet.provider_retrying("a__1", "provider HTTP 500, 1/4")
    assert quiet_out.getvalue() == ""
