"""The progress line counts trials that add up (issue 18, defect 4)."""

from documents_support import trial_result
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
