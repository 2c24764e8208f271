"""Live progress: the overall line, each running trial, and one line per finished trial.

On a terminal a live view sits at the bottom: the elapsed time with an ETA, the trial counts,
then every running trial with its phase and how long it has run; finished trials are printed
above it. Anywhere else (a file, a pipe into `grep` or `tee`) there is no live view: one
unwrapped line per event (`started …`, `scored … reward=…`; an error's further lines indented
below it), and the overall line when a job ends. A slot rerun after a harness error prints one
`retrying` line for the attempt that failed and one final line, for its last attempt; an agent
retrying a failed provider call prints `retrying <task> #k (provider HTTP 500, 2/4)` each time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from orchestra.documents.enums import TrialStatus
from orchestra.documents.trial import TrialResult
from orchestra.plural import plural
from orchestra.report.text.summary import counts_text

#: In `counts_text`'s argument order.
COUNTED_STATUSES = (
    TrialStatus.SCORED,
    TrialStatus.ERROR,
    TrialStatus.CANCELLED,
    TrialStatus.RUNNING,
)
MESSAGE_CHARS = 240
STATUS_STYLE = {
    TrialStatus.SCORED: "green",
    TrialStatus.ERROR: "red",
    TrialStatus.CANCELLED: "yellow",
}
#: Lines the live view keeps for itself besides the running trials (timing and counts lines,
#: "… more", the cursor's line).
LIVE_OVERHEAD_LINES = 4


def clock(seconds: float) -> str:
    """`m:ss`, or `h:mm:ss` from an hour."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class Running:
    label: str  # `<task> #<attempt>`
    phase: str
    since: float  # monotonic time the trial was first seen
    activity: str = ""  # its agents' activity (`1 in flight, 3.2k tokens, …`), once known


class Progress:
    """Satisfies `orchestra.jobs.runner.Progress`."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self._live: Live | None = None
        self._job = ""
        self._planned = 0
        self._attempts: int | None = None  # the job's k: attempts beyond it confirm a regression
        self._confirmations = 0  # confirmation slots seen (they add to the planned count)
        # by slot (task, attempt): a retried trial's new attempt replaces the superseded one
        self._status: dict[tuple[str, int], TrialStatus] = {}
        self._counts_by: dict[TrialStatus, int] = dict.fromkeys(TrialStatus, 0)  # of `_status`
        self._running: dict[str, Running] = {}
        self._finished_here = 0  # trials that ended in this command (not kept by a resume)
        self._started = time.monotonic()

    def start_job(
        self, name: str, planned: int, kept: list[TrialResult], *, attempts: int | None = None
    ) -> None:
        self._job, self._planned, self._attempts = name, planned, attempts
        self._status = {}
        self._confirmations = 0
        self._counts_by = dict.fromkeys(TrialStatus, 0)
        for kept_result in kept:
            self._set_status(kept_result.slot, kept_result.status)
        self._running = {}
        self._finished_here = 0
        self._started = time.monotonic()
        if kept and not self.quiet:
            self.console.print(f"{name}: resuming, {plural(len(kept), 'trial')} kept")
        if self.console.is_terminal:
            self._live = Live(
                console=self.console,
                get_renderable=self._view,
                refresh_per_second=2,
                transient=True,
            )
            self._live.start()

    def trial_update(self, result: TrialResult) -> None:
        name, status = result.trial_name, result.status
        before = self._set_status(result.slot, status)
        label = f"{result.task_name} #{result.attempt}"
        if self._attempts is not None and result.attempt > self._attempts:
            label += " (confirmation)"
        if status is TrialStatus.RUNNING:
            running = self._running.setdefault(name, Running(label, "", time.monotonic()))
            running.phase = str(result.phase)
            if before is not TrialStatus.RUNNING and not self.quiet and self._live is None:
                self.console.print(Text(f"{'started':9} {label} ({name})"))
        elif status != before and status in STATUS_STYLE:
            self._running.pop(name, None)
            self._finished_here += 1
            if not self.quiet:
                detail, explained = _detail(result)
                self.console.print(
                    Text.assemble(
                        (f"{status:9}", STATUS_STYLE[status]), f" {label} ({name}){detail}"
                    )
                )
                for line in explained:
                    self.console.print(Text(f"          {line}", style="dim"))
        if self._live is not None:
            self._live.refresh()

    def rerunning(self, result: TrialResult, rerun: int, reruns: int) -> None:
        """`result` ended in a harness error and its slot runs again (rerun `rerun` of
        `reruns`): not a final line, and the slot still counts as running."""
        self._set_status(result.slot, TrialStatus.RUNNING)
        self._running.pop(result.trial_name, None)
        if not self.quiet:
            detail, _ = _detail(result)
            label = f"{result.task_name} #{result.attempt}"
            self.console.print(
                Text.assemble(
                    (f"{'retrying':9}", "yellow"),
                    f" {label} ({result.trial_name}){detail}; rerun {rerun}/{reruns}",
                )
            )
        if self._live is not None:
            self._live.refresh()

    def provider_retrying(self, trial_name: str, detail: str) -> None:
        """A running trial's agent retries a failed provider call: one line per retry."""
        running = self._running.get(trial_name)
        if self.quiet or running is None:
            return
        self.console.print(
            Text.assemble((f"{'retrying':9}", "yellow"), f" {running.label} ({detail})")
        )

    def activity(self, trial_name: str, text: str) -> None:
        """A running trial's agents' activity, shown on its row of the live view."""
        running = self._running.get(trial_name)
        if running is not None:
            running.activity = text

    def stopped(self, reason: str, message: str) -> None:
        """The run starts no more trials; the ones in flight finish (or are cancelled)."""
        self.console.print(
            Text.assemble(("stopped  ", "bold red"), f" {reason}: {message}; no new trials")
        )

    def _set_status(self, slot: tuple[str, int], status: TrialStatus) -> TrialStatus | None:
        """The slot's new status (counted in O(1)); the one it had."""
        before = self._status.get(slot)
        if before is not None:
            self._counts_by[before] -= 1
        elif self._attempts is not None and slot[1] > self._attempts:
            self._confirmations += 1
        self._status[slot] = status
        self._counts_by[status] += 1
        return before

    def _counts(self) -> str:
        counts = (self._counts_by[status] for status in COUNTED_STATUSES)
        text = counts_text(self._planned + self._confirmations, *counts)
        if self._confirmations:
            text += f" (with {plural(self._confirmations, 'confirmation attempt')})"
        return text

    def _line(self) -> Text:
        """The overall line a job ends with."""
        return Text(f"{self._job}: {self._counts()}, elapsed {clock(self._elapsed())}")

    def _elapsed(self) -> float:
        return time.monotonic() - self._started

    def _eta(self) -> str:
        """From this command's pace: elapsed time per trial finished here (scored, error or
        cancelled) × trials left."""
        left = (
            self._planned
            + self._confirmations
            - sum(self._counts_by[status] for status in STATUS_STYLE)
        )
        if left <= 0 or self._finished_here == 0:
            return ""
        return f", ETA {clock(self._elapsed() / self._finished_here * left)}"

    def _view(self) -> Group:
        """The job with its elapsed time and ETA (short, so a narrow terminal keeps them), the
        counts, then every running trial that fits."""
        now = time.monotonic()
        room = max(1, self.console.height - LIVE_OVERHEAD_LINES)
        running = sorted(list(self._running.values()), key=lambda r: r.since)  # another thread
        rows = [
            Text(
                f"  {r.phase:<9} {clock(now - r.since):>7}  {r.label}"
                + (f"  ({r.activity})" if r.activity else ""),
                no_wrap=True,
                overflow="ellipsis",
            )
            for r in running[:room]
        ]
        if len(running) > room:
            rows.append(Text(f"  … and {len(running) - room} more running"))
        timing = f"elapsed {clock(self._elapsed())}{self._eta()}"
        return Group(
            Text(f"{timing} · {self._job}", no_wrap=True, overflow="ellipsis"),
            Text(self._counts(), no_wrap=True, overflow="ellipsis"),
            *rows,
        )

    def end_job(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self.console.print(self._line())


def _detail(result: TrialResult) -> tuple[str, list[str]]:
    """What follows a finished trial's label (its reward, or its error's first line), and the
    rest of a multi-line error message (a verifier's output), printed below it."""
    info = result.exception_info
    if result.status is not TrialStatus.SCORED and info is not None:
        first, *explained = info.exception_message.splitlines() or [""]
        return f" {info.exception_type}: {first[:MESSAGE_CHARS]}", explained
    return (f" reward={result.reward:.2f}" if result.reward is not None else ""), []
