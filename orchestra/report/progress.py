"""Live progress: the overall line, each running trial, and one line per finished trial.

On a terminal a live view sits at the bottom: the overall line with an ETA, then every running
trial with its phase and how long it has run; finished trials are printed above it. Anywhere
else (a file, a pipe into `grep` or `tee`) there is no live view: one unwrapped line per event
(`started …`, `scored … reward=…`), and the overall line when a job ends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from orchestra.documents.enums import TrialStatus
from orchestra.documents.trial import TrialResult

STATUS_STYLE = {
    TrialStatus.SCORED: "green",
    TrialStatus.ERROR: "red",
    TrialStatus.CANCELLED: "yellow",
}
#: Lines the live view keeps for itself besides the running trials (overall line, "… more").
LIVE_OVERHEAD_LINES = 3


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


class Progress:
    """Satisfies `orchestra.jobs.runner.Progress`."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self._live: Live | None = None
        self._job = ""
        self._planned = 0
        self._status: dict[str, TrialStatus] = {}
        self._running: dict[str, Running] = {}
        self._finished_here = 0  # trials that ended in this command (not kept by a resume)
        self._started = time.monotonic()

    def start_job(self, name: str, planned: int, kept: list[TrialResult]) -> None:
        self._job, self._planned = name, planned
        self._status = {r.trial_name: r.status for r in kept}
        self._running = {}
        self._finished_here = 0
        self._started = time.monotonic()
        if kept and not self.quiet:
            self.console.print(f"{name}: resuming, {len(kept)} trial(s) kept")
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
        before = self._status.get(name)
        self._status[name] = status
        label = f"{result.task_name} #{result.attempt}"
        if status is TrialStatus.RUNNING:
            running = self._running.setdefault(name, Running(label, "", time.monotonic()))
            running.phase = str(result.phase)
            if before is None and not self.quiet and self._live is None:
                self.console.print(Text(f"{'started':9} {label} ({name})"))
        elif status != before and status in STATUS_STYLE:
            self._running.pop(name, None)
            self._finished_here += 1
            if not self.quiet:
                self.console.print(
                    Text.assemble(
                        (f"{status:9}", STATUS_STYLE[status]), f" {label} ({name}){_detail(result)}"
                    )
                )
        if self._live is not None:
            self._live.refresh()

    def _line(self) -> Text:
        """The overall line; the job's name comes last, so a narrow view cuts it first."""
        statuses = list(self._status.values())
        done = sum(1 for s in statuses if s in STATUS_STYLE)
        errors = statuses.count(TrialStatus.ERROR)
        running = statuses.count(TrialStatus.RUNNING)
        elapsed = time.monotonic() - self._started
        return Text(
            f"{done}/{self._planned} done, {running} running, {errors} errors, "
            f"elapsed {clock(elapsed)}{self._eta(done, elapsed)} · {self._job}"
        )

    def _eta(self, done: int, elapsed: float) -> str:
        """From this command's pace: elapsed time per trial finished here × trials left."""
        left = self._planned - done
        if left <= 0 or self._finished_here == 0:
            return ""
        return f", ETA {clock(elapsed / self._finished_here * left)}"

    def _view(self) -> Group:
        now = time.monotonic()
        room = max(1, self.console.height - LIVE_OVERHEAD_LINES)
        running = sorted(list(self._running.values()), key=lambda r: r.since)  # another thread
        rows = [
            Text(
                f"  {r.phase:<9} {clock(now - r.since):>7}  {r.label}",
                no_wrap=True,
                overflow="ellipsis",
            )
            for r in running[:room]
        ]
        if len(running) > room:
            rows.append(Text(f"  … and {len(running) - room} more running"))
        return Group(Text(self._line().plain, no_wrap=True, overflow="ellipsis"), *rows)

    def end_job(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self.console.print(self._line())


def _detail(result: TrialResult) -> str:
    info = result.exception_info
    if result.status is not TrialStatus.SCORED and info is not None:
        message = " ".join(info.exception_message.split())  # one line per event, whatever it says
        return f" {info.exception_type}: {message[:120]}"
    return f" reward={result.reward:.2f}" if result.reward is not None else ""
