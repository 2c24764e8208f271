"""Live progress: trials done/running/errors and elapsed time, plus per-trial lines."""

from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.text import Text

from orchestra.documents.enums import TrialStatus
from orchestra.documents.trial import TrialResult
from orchestra.plural import plural
from orchestra.report.render import counts_text

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


class Progress:
    """One overall line kept live at the bottom; finished trials are printed above it.

    Satisfies `orchestra.jobs.runner.Progress`.
    """

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self._live: Live | None = None
        self._job = ""
        self._planned = 0
        self._status: dict[str, TrialStatus] = {}
        self._started = time.monotonic()

    def start_job(self, name: str, planned: int, kept: list[TrialResult]) -> None:
        self._job, self._planned = name, planned
        self._status = {r.trial_name: r.status for r in kept}
        self._started = time.monotonic()
        if kept and not self.quiet:
            self.console.print(f"{name}: resuming, {plural(len(kept), 'trial')} kept")
        self._live = Live(self._line(), console=self.console, refresh_per_second=4, transient=True)
        self._live.start()

    def trial_update(self, result: TrialResult) -> None:
        name, status = result.trial_name, result.status
        before = self._status.get(name)
        self._status[name] = status
        if status != before and status in STATUS_STYLE and not self.quiet:
            reward = result.reward
            detail = f" reward={reward:.2f}" if reward is not None else ""
            info = result.exception_info
            explained: list[str] = []
            if status is not TrialStatus.SCORED and info is not None:
                # a multi-line message (a verifier's output) goes below its first line
                first, *explained = info.exception_message.splitlines() or [""]
                detail = f" {info.exception_type}: {first[:MESSAGE_CHARS]}"
            self.console.print(
                Text.assemble(
                    (f"{status:9}", STATUS_STYLE[status]),
                    f" {result.task_name} #{result.attempt} ({name}){detail}",
                )
            )
            for line in explained:
                self.console.print(Text(f"          {line}", style="dim"))
        if self._live is not None:
            self._live.update(self._line())

    def _line(self) -> Text:
        statuses = list(self._status.values())
        counts = counts_text(
            self._planned, *(statuses.count(status) for status in COUNTED_STATUSES)
        )
        elapsed = int(time.monotonic() - self._started)
        return Text(f"{self._job}: {counts}, elapsed {elapsed // 60}:{elapsed % 60:02d}")

    def stopped(self, reason: str, message: str) -> None:
        """The run starts no more trials; the ones in flight finish (or are cancelled)."""
        self.console.print(
            Text.assemble(("stopped  ", "bold red"), f" {reason}: {message}; no new trials")
        )

    def end_job(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self.console.print(self._line())
