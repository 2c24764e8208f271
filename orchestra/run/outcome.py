"""How a run ended, for the command line to print and map to its exit code (§2.4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from orchestra.errors import OrchestraError
from orchestra.jobs.runner import JobOutcome
from orchestra.report.files import ReportFiles
from orchestra.run.confirmation import TaskConfirmation
from orchestra.run.scope import RunScope


class RunEnd(StrEnum):
    DONE = "done"  # every planned trial scored
    CONFIRMED_REGRESSION = "confirmed_regression"  # --confirm-against: a regression confirmed
    TRIAL_ERRORS = "trial_errors"  # a trial ended in error, or not every trial ran
    STOPPED = "stopped"  # the cost cap or the circuit breaker stopped it early
    INTERRUPTED = "interrupted"  # SIGINT, SIGTERM or SIGHUP
    MACHINE_FAULT = "machine_fault"  # the jobs directory could not be written (a full disk)
    USAGE = "usage"  # refused: bad options or documents; nothing ran
    PREFLIGHT = "preflight"  # refused: a check or the stack failed


def refusal_of(error: OrchestraError) -> RunEnd:
    """What an error that carries its exit code (1: usage, else: preflight) refuses as."""
    return RunEnd.USAGE if error.exit_code == 1 else RunEnd.PREFLIGHT


class Refused(OrchestraError):
    """A check failed before anything started: how the run ends (a usage error, exit 1, or a
    failed preflight, exit 2) and the message."""

    def __init__(self, end: RunEnd, message: str, *, missing_keys: bool = False) -> None:
        super().__init__(message)
        self.end = end
        self.exit_code = 1 if end is RunEnd.USAGE else 2
        self.missing_keys = missing_keys


@dataclass
class RunOutcome:
    end: RunEnd
    #: one-line errors to print (`error: …`), in order
    errors: list[str] = field(default_factory=list)
    #: the scope that ran (None when the run was refused before one was chosen)
    scope: RunScope | None = None
    jobs: list[JobOutcome] = field(default_factory=list)
    #: the plan is not finished: the command line prints how to resume it, last
    resumable: bool = False
    #: the jobs ran (to their end or to a stop): the summary is worth printing
    ran: bool = False
    #: refused for missing API keys: `--allow-missing-keys` would print the plan
    missing_keys: bool = False
    #: --confirm-against: the tasks that regressed against the baseline and their verdicts
    confirmations: list[TaskConfirmation] = field(default_factory=list)
    #: the reports written when the jobs ran (`--report`, or rewritten where they existed)
    reports: list[ReportFiles] = field(default_factory=list)

    @classmethod
    def refused(cls, error: Refused, scope: RunScope | None = None) -> RunOutcome:
        return cls(error.end, [str(error)], scope, missing_keys=error.missing_keys)
