"""What `benchmark` and `resume` print when their run ended, the command that finishes a plan
that is not done, and the exit code of each way a run ends (orchestrator.md §2.4)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from orchestra.cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PREFLIGHT,
    EXIT_TRIAL_ERRORS,
    EXIT_USAGE,
    error_lines,
)
from orchestra.cli.options import RESUMABLE, RUN_OPTIONS
from orchestra.cli.terminal import print_summary
from orchestra.config.errors import display_path
from orchestra.jobs.aggregate import aggregate
from orchestra.plural import plural
from orchestra.report.stats.confirm import NIGHTLY_ALPHA
from orchestra.run.outcome import RunEnd, RunOutcome
from orchestra.run.prepare import RunPlan
from orchestra.run.scope import masked_database_url

PROGRAM = "orchestra"

EXIT_CODES = {
    RunEnd.DONE: EXIT_OK,
    RunEnd.CONFIRMED_REGRESSION: EXIT_TRIAL_ERRORS,  # 3, as `orchestra compare`
    RunEnd.TRIAL_ERRORS: EXIT_TRIAL_ERRORS,
    RunEnd.STOPPED: EXIT_PREFLIGHT,  # stopped early: not everything was run
    RunEnd.INTERRUPTED: EXIT_INTERRUPTED,
    # a full disk ends the run as an interrupt does: nothing lost, resumable
    RunEnd.MACHINE_FAULT: EXIT_INTERRUPTED,
    RunEnd.USAGE: EXIT_USAGE,
    RunEnd.PREFLIGHT: EXIT_PREFLIGHT,
}


def finish(outcome: RunOutcome, plan: RunPlan, console: Console) -> int:
    """Print how the run ended (errors, the summary, early stops, reports, and the resume
    command as the last line when the plan is not done); the exit code."""
    if outcome.errors:
        error_lines("\n".join(outcome.errors))
    if outcome.ran:
        _print_summary(outcome, plan, console)
        _print_confirmations(outcome, console)
    if outcome.resumable:
        sys.stdout.flush()
        sys.stderr.write(f"the plan is not finished; to resume it:\n{resume_command(plan)}\n")
        sys.stderr.flush()
    return EXIT_CODES[outcome.end]


def _print_summary(outcome: RunOutcome, plan: RunPlan, console: Console) -> None:
    scope = plan.scope
    console.print()
    # `--json` is `summarize`'s option: after a run the hint is the whole command
    summarize = shlex.join([program(), "summarize", "--json", display_path(scope.path)])
    print_summary(aggregate(scope.records()), console, every_column=summarize)
    for job in outcome.jobs:
        if job.stop is not None:
            console.print(
                f"job {job.name} stopped early ({job.stop.reason}): {job.stop.message}",
                markup=False,
                highlight=False,
            )
    for files in outcome.reports:
        console.print(f"reports: {', '.join(str(path) for path in files.paths)}")


def _print_confirmations(outcome: RunOutcome, console: Console) -> None:
    """--confirm-against or --baseline-history: a line per confirmed task, then the decision
    naming the tasks that fail the run last."""
    stored = None if outcome.scope is None else outcome.scope.stored
    if stored is None or (stored.confirm_against is None and stored.baseline_history is None):
        return
    lines = [found.line() for found in outcome.confirmations]
    regressed = [found.task for found in outcome.confirmations if found.regression.rejected]
    missed = [
        found.task
        for found in outcome.confirmations
        if found.confirmed and not found.regression.rejected
    ]
    family = f"Holm over {plural(len(lines), 'confirmed task')} at α={NIGHTLY_ALPHA:g}"
    if missed:
        lines.append(f"below the reliability target: {', '.join(missed)} ({family})")
    if regressed:
        lines.append(f"confirmed regression: {', '.join(regressed)} ({family})")
    elif not outcome.confirmations:
        lines.append("no task regressed against the baseline: no confirmation attempts")
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def program() -> str:
    """How this command was invoked (`.venv/bin/orchestra`), when it can be run the same way."""
    invoked = sys.argv[0] if sys.argv else ""
    return invoked if Path(invoked).name == PROGRAM else PROGRAM


def resume_command(plan: RunPlan) -> str:
    """`orchestra resume <dir>` with every option of this command that the run does not
    store already (a database password masked, never printed)."""
    stored = plan.scope.stored
    current = plan.effective.updated({"stack": plan.modes.stack, "env": plan.modes.env})
    args = [program(), "resume", display_path(plan.scope.path)]
    for name in RESUMABLE:
        value, before = current.option_value(name), stored.option_value(name)
        flag = RUN_OPTIONS[name].flag
        if isinstance(value, bool):
            args += [flag] if value and not before else []
        elif value is not None and _compared(value) != _compared(before):
            args += [flag, _shown(name, value)]
    return shlex.join(args)


def _compared(value: Any) -> Any:
    return Path(value).absolute() if isinstance(value, Path) else value


def _shown(name: str, value: Any) -> str:
    if name == "database_url":
        return masked_database_url(str(value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
