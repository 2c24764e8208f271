"""From a `RunConfig` to what a run works on: the tasks, the condition, the modes and the run
(new, found or named) for `benchmark`; the stored run updated by the options given for
`resume` (§2.3, §2.5). Everything here reads; nothing is written."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestra.config.condition import Condition, load_condition
from orchestra.config.errors import ConfigError
from orchestra.config.task import load_task
from orchestra.documents.enums import StackMode
from orchestra.documents.run import RunRecord
from orchestra.documents.run_config import AUTO, RunConfig
from orchestra.documents.run_config_file import options_problem
from orchestra.jobs.layout import load_job_config
from orchestra.jobs.plan import PlannedJob, dataset_paths, discover_tasks, select_tasks
from orchestra.jobs.run import RunRequest, RunTarget, check_plan_unchanged, choose_run, run_of
from orchestra.paths import JobPaths
from orchestra.run.execution import Execution
from orchestra.run.outcome import Refused, RunEnd
from orchestra.run.preflight import check_condition
from orchestra.run.scope import RunScope, storable_database_url, stored_config_of_job
from orchestra.stack.select import ModeError, Modes, choose_modes


@dataclass(frozen=True)
class RunPlan:
    """What a run works on, once its options were read and the run chosen."""

    scope: RunScope
    condition: Condition
    modes: Modes
    #: the stored options with this command's on top: what the runner, the executors and the
    #: confirmation reruns read (`scope.stored` is what the run keeps for the next command)
    effective: RunConfig
    warnings: tuple[str, ...] = ()


def plan_benchmark(config: RunConfig, execution: Execution) -> RunPlan:
    """`orchestra benchmark`: the selected tasks under the condition, in the run they belong
    to (`Refused` naming the problem)."""
    with refusals():
        selection = config.selection
        tasks, warnings = select_tasks(discover_tasks(*dataset_paths(selection)), selection)
        condition = load_condition(
            config.manifest, config.endpoint_config, config.artifact_root, verify=False
        )
        modes = choose_modes(execution.stack_choice(config), config.env, config.relay_url)
        check_condition(condition)
        request = RunRequest(
            condition, modes.env, tuple(tasks), stored_config(config, modes, condition)
        )
        target, run_warnings = choose_run(
            config.jobs_dir,
            request,
            run_name=config.run_name,
            job_name=config.job_name,
            new_run=config.new_run,
        )
    scope = RunScope(
        target.jobs, target.paths.root, target.record.settings, target.paths.root, target
    )
    return RunPlan(scope, condition, modes, config, (*warnings, *run_warnings))


def stored_config(config: RunConfig, modes: Modes, condition: Condition) -> RunConfig:
    """What a new run records so that `orchestra resume RUN_DIR` starts its jobs the same way:
    paths absolute, the modes as chosen, no database password."""
    selection, trial = config.selection, config.trial
    bin_dir = trial.buzz_bin_dir.absolute() if trial.buzz_bin_dir else None
    return config.model_copy(
        update={
            "selection": selection.model_copy(
                update={"paths": [path.absolute() for path in dataset_paths(selection)]}
            ),
            "manifest": condition.manifest_path.absolute(),
            "endpoint_config": condition.endpoint_config.path.absolute(),
            "artifact_root": condition.artifact_root,
            "jobs_dir": config.jobs_dir.absolute(),
            "stack": modes.stack,
            "env": modes.env,
            "database_url": storable_database_url(config.database_url),
            "state_dir": config.state_dir.absolute(),
            "trial": trial.model_copy(update={"buzz_bin_dir": bin_dir}),
        }
    ).stored()


def plan_resume(path: Path, given: Mapping[str, Any]) -> RunPlan:
    """`orchestra resume PATH`: the run (or job from before runs) as it was started, with the
    options `given` on the command line instead of the stored ones."""
    with refusals():
        scope = _resumed_scope(path)
        config = resumed_config(scope.stored, given)
        condition = load_condition(
            config.manifest, config.endpoint_config, config.artifact_root, verify=False
        )
        modes = choose_modes(config.stack, config.env, config.relay_url)
        check_condition(condition)
        if scope.run is not None:
            jobs = check_plan_unchanged(scope.run.paths, scope.run.record, condition, modes.env)
            scope = replace(scope, jobs=jobs, run=replace(scope.run, jobs=jobs))
    return RunPlan(scope, condition, modes, config)


def resumed_config(stored: RunConfig, given: Mapping[str, Any]) -> RunConfig:
    """The stored config updated by `given`. `--stack auto` (the default) keeps the run's
    stack, and a relay URL alone asks for an external stack, as on `benchmark`; another stack
    than external drops the stored relay and database URLs."""
    changes = dict(given)
    if changes.get("stack") == AUTO and "relay_url" not in changes:
        del changes["stack"]
    if changes.get("env") == AUTO:
        del changes["env"]
    if "relay_url" in changes and "stack" not in changes:
        changes["stack"] = AUTO
    stack = changes.get("stack", stored.stack)
    if stack not in (StackMode.EXTERNAL, AUTO) and "relay_url" not in changes:
        changes |= {"relay_url": None, "database_url": changes.get("database_url")}
    return stored.updated(changes)


def _resumed_scope(path: Path) -> RunScope:
    """The run `path` is or belongs to, or the job directory from before runs it is (a run's
    jobs are filled in once the condition is loaded: `check_plan_unchanged`)."""
    run = run_of(path)
    if run is not None:
        record = RunRecord.load(run.run_json)
        target = RunTarget(run, record, (), "named")
        return RunScope((), run.root, record.settings, run.root, target)
    config = load_job_config(JobPaths(path))
    tasks = tuple(load_task(Path(task.dir)) for task in config.plan.tasks)
    job = PlannedJob(config.job_name, config.plan.layer, config.plan.attempts, tasks)
    return RunScope((job,), path.absolute().parent, stored_config_of_job(config), path)


@contextmanager
def refusals() -> Iterator[None]:
    """What can go wrong while reading options and documents, as `Refused` (exit 1, one line
    per problem)."""
    try:
        yield
    except ConfigError as error:
        lines = "\n".join(str(single) for single in error.errors)
        raise Refused(RunEnd.USAGE, lines) from None
    except ModeError as error:
        raise Refused(RunEnd.USAGE, str(error)) from None
    except ValidationError as error:  # options that contradict each other
        raise Refused(RunEnd.USAGE, options_problem(error)) from None
