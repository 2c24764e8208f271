"""`Run`: one `benchmark` or `resume` run below the command line (§2.3-§2.5): preflight, the
stack's lifetime, the jobs one after the other with the rule that stops them, the signals that
interrupt them, and a typed outcome. The command line parses, calls, prints and maps the
outcome to an exit code; `bench/scale.py` and the tests call this directly."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from rich.console import Console

from orchestra.documents.enums import EnvKind, SandboxKind, StackMode, TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.errors import OrchestraError
from orchestra.jobs.controls import RunState
from orchestra.jobs.cost_estimate import estimate_cost, estimate_wall_time
from orchestra.jobs.endpoint_probe import ProbeResult
from orchestra.jobs.executor import Executor
from orchestra.jobs.layout import JobConfigMismatch
from orchestra.jobs.leftovers import JobInUse, reap_jobs_dir
from orchestra.jobs.plan import Plan, render_dry_run
from orchestra.jobs.runner import Interrupt, JobOutcome, RunShare, run_job
from orchestra.jobs.services import JobServices
from orchestra.paths import JobPaths
from orchestra.report.compare.comparison import CompareInputError
from orchestra.report.files import report_problem, write_reports
from orchestra.report.stats.power import dry_run_power_text
from orchestra.report.text.progress import Progress
from orchestra.results.schema import DatabaseError
from orchestra.run.confirmation import (
    BaselineConfirmation,
    baseline_of_history,
    baseline_of_run,
)
from orchestra.run.execution import (
    Execution,
    driver_stack,
    dry_run_text,
    start_executor,
    stop_executor,
)
from orchestra.run.floor import compute_floor, floor_wanted
from orchestra.run.outcome import Refused, RunEnd, RunOutcome, refusal_of
from orchestra.run.preflight import Preflight, check_endpoints, preflight
from orchestra.run.prepare import RunPlan
from orchestra.run.smoke import SmokeFailed, smoke_gate
from orchestra.stack.embedded import EmbeddedStack
from orchestra.stack.readiness import StackError
from orchestra.stack.select import check_docker
from orchestra.stack.state import BenchmarkState, StateError, load_state
from orchestra.streams import when_stdout_gone
from orchestra.trial.env.sandbox import SandboxSupport, sandbox_support

#: A closed terminal (SIGHUP) stops a run as Ctrl-C and SIGTERM do (§2.4 exit 130).
INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def note(line: str) -> None:
    """A line on stderr, whatever the terminal's width."""
    print(line, file=sys.stderr, flush=True)


class Run:
    """One run of `plan` (`plan_benchmark` or `plan_resume`): its progress on `console`, its
    notes through `warn`."""

    def __init__(
        self,
        plan: RunPlan,
        execution: Execution,
        console: Console,
        *,
        warn: Callable[[str], None] = note,
    ) -> None:
        self.plan = plan
        self.effective = plan.effective
        self.scope = plan.scope
        self.execution = execution
        self.console = console
        self.warn = warn

    # --- the dry run ---------------------------------------------------------------------------

    def dry_run(self, *, allow_missing_keys: bool = False) -> RunOutcome:
        """Every check the real run makes before it starts the stack; the plan printed;
        nothing written. Every failed check ends it as a usage error (§2.4) but the live
        endpoint check, asked for with `check_endpoints`."""
        plan, scope = self.plan, self.scope
        try:
            api_keys = preflight(
                scope,
                plan.condition,
                plan.modes,
                self.effective,
                allow_missing_keys=allow_missing_keys,
            )
            owed = scope.owed(self.effective.keep_errors)
            self._confirmation()  # the baseline is read as the real run reads it
        except Refused as error:
            return RunOutcome(RunEnd.USAGE, [str(error)], missing_keys=error.missing_keys)
        except DocumentError as error:
            return RunOutcome(RunEnd.USAGE, [str(error)])
        text = render_dry_run(
            Plan(self.effective.selection, scope.jobs, plan.warnings),
            plan.condition,
            stack_mode=plan.modes.stack,
            env_mode=plan.modes.env,
            environ=os.environ,
            run=scope.describe(owed),
        )
        print(text, end="")
        # Power said out loud (docs/statistics.md "Power"): the smallest change a comparison of this
        # plan can detect
        print(dry_run_power_text([(len(job.tasks), job.attempts) for job in scope.jobs]), end="")
        estimate = estimate_cost(
            self.effective.jobs_dir, plan.condition.manifest_sha256, scope.n_planned
        )
        if estimate is None:
            print(
                f"Cost estimate  none (no earlier job of this condition in {self.effective.jobs_dir})"
            )
        else:
            print(estimate.line())
        try:
            print(dry_run_text(self.execution), end="")
        except OrchestraError as error:  # the cluster cannot be reached or offers no slot
            return RunOutcome(refusal_of(error), [str(error)])
        if self.effective.check_endpoints:
            try:
                probes = self._check_endpoints(api_keys)
            except Preflight as error:
                return RunOutcome(RunEnd.PREFLIGHT, [str(error)])
            wall_time = estimate_wall_time(
                self.effective.jobs_dir,
                plan.condition.manifest_sha256,
                (scope.n_planned, self.effective.n_concurrent),
                probes,
            )
            if wall_time is not None:
                print(wall_time)
        return RunOutcome(RunEnd.DONE, scope=scope)

    # --- the real run ----------------------------------------------------------------------------

    def execute(self) -> RunOutcome:
        """Preflight, then the jobs on a running stack; how the run ended."""
        plan, scope = self.plan, self.scope
        for warning in plan.warnings:
            self.warn(f"warning: {warning}")
        try:
            api_keys = preflight(scope, plan.condition, plan.modes, self.effective)
            owed = scope.owed(self.effective.keep_errors)
            if self.execution.ray is None:  # under Ray, Docker is the nodes' business
                check_docker(plan.modes)
            state = load_state(self.effective.state_dir)
            confirmation = self._confirmation()
            if self.execution.ray is None and plan.modes.stack == StackMode.EMBEDDED:
                # a busy relay port is a preflight failure: checked before the run is written
                asyncio.run(EmbeddedStack(state, self.effective.relay_port).preflight())
            executor = start_executor(self.execution)
        except Refused as error:
            return RunOutcome.refused(error, scope)
        except DocumentError as error:
            return RunOutcome(RunEnd.USAGE, [str(error)], scope)
        except (StackError, StateError) as error:
            return RunOutcome(RunEnd.PREFLIGHT, [str(error)], scope)
        except OrchestraError as error:  # the Ray cluster (or its extra)
            return RunOutcome(refusal_of(error), [str(error)], scope)
        try:
            outcome = self._execute(api_keys, owed, state, executor, confirmation)
        finally:
            stop_executor(self.execution)
        if outcome.ran:
            self._write_reports(outcome)
        return outcome

    def _write_reports(self, outcome: RunOutcome) -> None:
        """The run's report when `--report` asks for it (now or when the run started), and
        every report that exists already, written again over the trials as they now are
        (§2.5); their paths, or what could not be written, go into `outcome`."""
        for job_dirs, out_dir in self.scope.report_dirs(self.effective.report):
            try:
                outcome.reports.append(write_reports(job_dirs, out_dir))
            except (DocumentError, OSError) as error:
                outcome.errors.append(report_problem(error, out_dir))

    def _confirmation(self) -> BaselineConfirmation | None:
        """The confirmation reruns `--confirm-against` or `--baseline-history` asks for (the
        baseline read now: a bad one refuses the run before anything starts)."""
        effective = self.effective
        try:
            if effective.baseline_history is not None:
                jobs = list(self.scope.jobs)
                baseline = baseline_of_history(
                    effective.baseline_history, self.plan.condition, effective, jobs
                )
                for line in baseline.lines:
                    self._say(line)
                return BaselineConfirmation(effective, baseline)
            if effective.confirm_against is not None:
                return BaselineConfirmation(effective, baseline_of_run(effective.confirm_against))
        except (CompareInputError, DocumentError) as error:
            raise Refused(RunEnd.USAGE, f"--confirm-against: {error}") from None
        except DatabaseError as error:
            raise Refused(RunEnd.USAGE, f"--baseline-history: {error}") from None
        return None

    def _execute(
        self,
        api_keys: dict[str, str],
        owed: int,
        state: BenchmarkState,
        executor: Executor,
        confirmation: BaselineConfirmation | None,
    ) -> RunOutcome:
        plan, scope, effective = self.plan, self.scope, self.effective
        interrupt = Interrupt()
        sandbox = sandbox_support()
        if plan.modes.env is EnvKind.LOCAL and sandbox.kind is SandboxKind.NONE:
            self.warn(sandbox.warning())
        if effective.check_endpoints:  # before the run is announced: a failure creates nothing
            try:
                self._check_endpoints(api_keys)
            except Preflight as error:
                return RunOutcome(RunEnd.PREFLIGHT, [str(error)], scope)
        self._say(scope.describe(owed))
        if plan.condition.is_oracle:
            self.console.print(
                "[yellow]oracle condition: agents replay the reference solutions; "
                "scores measure the pipeline, not a model[/yellow]"
            )
        try:
            try:
                scope.begin(owed)
                shared = RunShare(effective, scope.stored, RunState.of(effective), confirmation)
                jobs = self._jobs(api_keys, state, sandbox, executor, interrupt, shared)
                outcomes = asyncio.run(jobs)
                if shared.state.fault is not None:
                    raise shared.state.fault
            except* OSError as errors:
                raise MachineFault.of(errors, scope.jobs_root) from None
        except MachineFault as fault:  # nothing is lost: a resume runs what is owed
            return RunOutcome(RunEnd.MACHINE_FAULT, [str(fault)], scope, resumable=True)
        except (StackError, JobInUse) as error:
            # the terminal's Ctrl-C also reaches the stack's children (pip, docker): their
            # failure is then the interruption, not a stack fault
            if interrupt.requested.is_set():
                self.warn("interrupted while the stack was starting; no trial ran")
                return RunOutcome(RunEnd.INTERRUPTED, scope=scope, resumable=True)
            return RunOutcome(RunEnd.PREFLIGHT, [str(error)], scope, resumable=True)
        except (JobConfigMismatch, DocumentError) as error:
            return RunOutcome(RunEnd.USAGE, [str(error)], scope)
        except SmokeFailed as error:
            return RunOutcome(RunEnd.PREFLIGHT, [str(error)], scope, resumable=True)
        return self._ended(outcomes, interrupt.requested.is_set(), confirmation)

    def _ended(
        self,
        outcomes: list[JobOutcome],
        interrupted: bool,
        confirmation: BaselineConfirmation | None = None,
    ) -> RunOutcome:
        planned = {job.name: job for job in self.scope.jobs}
        results = [result for outcome in outcomes for result in outcome.results]
        stopped = any(outcome.stop is not None for outcome in outcomes)
        in_plan = [  # confirmation attempts (beyond k) never make up for a planned trial
            result
            for outcome in outcomes
            for result in outcome.results
            if result.attempt <= planned[outcome.name].attempts
        ]
        unfinished = len(in_plan) < self.scope.n_planned
        confirmations = (
            []
            if confirmation is None
            else confirmation.confirmations(
                [(planned[outcome.name], outcome.results) for outcome in outcomes]
            )
        )
        if interrupted:
            end = RunEnd.INTERRUPTED
        elif stopped:
            end = RunEnd.STOPPED  # not everything was run
        elif any(c.confirmed for c in confirmations):
            end = RunEnd.CONFIRMED_REGRESSION  # wins over errored trials (docs/decisions.md D88)
        elif unfinished or any(r.status is not TrialStatus.SCORED for r in results):
            end = RunEnd.TRIAL_ERRORS
        else:
            end = RunEnd.DONE
        resumable = interrupted or stopped or unfinished
        return RunOutcome(
            end,
            scope=self.scope,
            jobs=outcomes,
            resumable=resumable,
            ran=True,
            confirmations=confirmations,
        )

    async def _jobs(
        self,
        api_keys: dict[str, str],
        state: BenchmarkState,
        sandbox: SandboxSupport,
        executor: Executor,
        interrupt: Interrupt,
        shared: RunShare,
    ) -> list[JobOutcome]:
        """The jobs in plan order on the stack, until one does not run all its trials."""
        plan, scope, effective = self.plan, self.scope, self.effective
        loop = asyncio.get_running_loop()
        for sig in INTERRUPT_SIGNALS:
            loop.add_signal_handler(sig, interrupt.trigger)

        def output_gone() -> None:
            # On the loop's next turn, so a Ctrl-C that closed the pipe (`… | grep`) is seen first.
            loop.call_soon_threadsafe(self._output_gone, interrupt)

        when_stdout_gone(output_gone)
        skip = {JobPaths.of(scope.jobs_dir, job.name).root for job in scope.jobs}
        for line in await reap_jobs_dir(scope.jobs_root, skip=skip):
            self.console.print(f"reaped a dead run's leftovers: {line}", markup=False)
        outcomes: list[JobOutcome] = []
        async with driver_stack(self.execution, plan.modes, state, effective) as (
            stack_info,
            watch,
        ):
            services = JobServices(
                condition=plan.condition,
                environment=plan.modes.env,
                stack=stack_info,
                state=state,
                options=effective.trial,
                api_keys=api_keys,
                jobs_dir=scope.jobs_dir,
                jobs_root=scope.jobs_root,
                sandbox=sandbox,
                watch=watch,
            )
            progress = Progress(self.console, quiet=effective.quiet)
            try:
                runner = partial(run_job, run=shared, progress=progress, interrupt=interrupt)
                if effective.smoke:
                    self._say(
                        await smoke_gate(scope, services, runner, executor, effective.n_concurrent)
                    )
                if floor_wanted(  # its trials are not listed one by one
                    plan.condition, no_floor=effective.no_floor, run=scope.run is not None
                ):
                    quiet = partial(runner, progress=Progress(self.console, quiet=True))
                    await compute_floor(scope, services, quiet, executor, self._say)
                    if interrupt.requested.is_set():
                        return outcomes
                for job in scope.jobs:
                    outcome = await run_job(job, services, shared, progress, interrupt, executor)
                    outcomes.append(outcome)
                    done = outcome.count(TrialStatus.SCORED) + outcome.count(TrialStatus.ERROR)
                    if outcome.interrupted or outcome.stop is not None or done < job.n_trials:
                        break
            finally:
                await services.oracle.stop()
        return outcomes

    def _output_gone(self, interrupt: Interrupt) -> None:
        if interrupt.requested.is_set():
            return  # Ctrl-C in `… | grep` ends grep too: then the closed pipe is no news
        self.warn(
            "note: standard output closed; the run goes on without printing and writes its "
            f"results to {self.scope.path} (Ctrl-C cancels it)"
        )

    def _check_endpoints(self, api_keys: dict[str, str]) -> list[ProbeResult]:
        return check_endpoints(
            self.plan.condition,
            api_keys,
            self._say,
            lambda line: self.warn(f"warning: {line}"),
            strict=self.effective.strict_endpoints,
        )

    def _say(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)


class MachineFault(OrchestraError):
    """The machine failed the run: an OS error writing the jobs directory (a full disk, a
    read-only or vanished filesystem). `str()` is one line naming the path and the error. The
    run ends as an interrupted one does (§2.4): nothing is lost, a resume runs what is owed."""

    exit_code = 130

    @classmethod
    def of(cls, errors: BaseExceptionGroup[OSError], jobs_root: Path) -> MachineFault:
        """The first such error of `errors`; any other OS error is raised again as it was."""
        faults = errors.subgroup(lambda error: _is_machine_fault(error, jobs_root))
        if faults is None:
            raise errors
        error = _first(faults)
        where = error.filename if error.filename is not None else jobs_root
        return cls(f"cannot write {where}: {error.strerror or error}")


#: what a full or failing disk raises, wherever the write was
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def _is_machine_fault(error: BaseException, jobs_root: Path) -> bool:
    if not isinstance(error, OSError):
        return False
    if error.errno in DISK_ERRNOS:
        return True
    path = Path(str(error.filename)) if error.filename is not None else None
    return path is not None and path.absolute().is_relative_to(jobs_root.absolute())


def _first(group: BaseExceptionGroup[OSError]) -> OSError:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first
