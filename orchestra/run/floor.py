"""The do-nothing floor (orchestrator.md §2.2 `--no-floor`, §10.1, docs/decisions.md D114): what
a roster whose every seat is on the built-in `null` endpoint scores on each task of a model
condition's run, so a summary can say which passes doing nothing would have earned.

Before the plan, every task of the run whose floor the state directory's cache lacks gets one
trial with the same roster on the `null` endpoint, as a job of its own (`<run>/floor/`), through
the same runner and stack as the plan; it is never in `run.json`'s jobs, so no rate counts it,
and its cost is 0. A scored floor trial is cached by the task's contract digest (D109), so the
next run of that contract runs none; one that did not score leaves the floor unknown (None, "—"),
never 0, and is tried again by the next command. The run directory's `floor.json` records the
floor of every task of the run (cached or computed), which is what summaries read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from orchestra.config.condition import Condition
from orchestra.config.task import Task
from orchestra.documents.enums import TrialStatus
from orchestra.documents.floor import FloorRecord, RunFloor, TaskFloor
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig
from orchestra.documents.trial import TrialResult
from orchestra.jobs.executor import Executor
from orchestra.jobs.layout import JobConfigMismatch
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.runner import JobOutcome
from orchestra.jobs.services import JobServices
from orchestra.jsonio import utc_timestamp
from orchestra.paths import RunPaths, StatePaths
from orchestra.plural import plural
from orchestra.run.scope import RunScope
from orchestra.run.smoke import JobRunner

#: The floor job's directory in the run; a later command whose tasks it cannot resume takes
#: `floor-2`, `floor-3`, ...
FLOOR_JOB = "floor"
#: How many floor job names a run tries before it gives the floor up.
MAX_FLOOR_JOBS = 20


def floor_wanted(condition: Condition, *, no_floor: bool, run: bool) -> bool:
    """A run (`run`: not a lone job from before runs) of a model: the oracle's floor is no
    news, and a null condition (the oracle too) is its own floor."""
    return not no_floor and run and not condition.is_oracle


def run_tasks(jobs: Iterable[PlannedJob]) -> list[Task]:
    """Every task of the plan once, in plan order."""
    seen: dict[str, Task] = {}
    for job in jobs:
        for task in job.tasks:
            seen.setdefault(task.name, task)
    return list(seen.values())


def cached_floor(state: StatePaths, task: Task) -> FloorRecord | None:
    """The task's cached floor; None when there is none, or a file that does not read (it is
    computed again and rewritten)."""
    try:
        record = FloorRecord.load_if_readable(state.floor_record(task.contract_digest))
    except DocumentError:  # another version's or a damaged file: computed again, rewritten
        return None
    if record is None or record.contract_digest != task.contract_digest:
        return None
    return record


def cache_floor(state: StatePaths, task: Task, result: TrialResult, trial: str) -> None:
    """Cache a scored floor trial (the only kind cached)."""
    assert result.status is TrialStatus.SCORED and result.reward is not None
    path = state.floor_record(task.contract_digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    FloorRecord(
        contract_digest=task.contract_digest,
        task_name=task.name,
        reward=result.reward,
        trial=trial,
        at=utc_timestamp(),
    ).write(path)


@dataclass(frozen=True)
class FloorPlan:
    """The run's tasks split into those whose floor is cached and those that need a trial."""

    tasks: list[Task]
    cached: dict[str, FloorRecord]

    @property
    def owed(self) -> list[Task]:
        return [task for task in self.tasks if task.name not in self.cached]

    @classmethod
    def of(cls, state: StatePaths, tasks: list[Task]) -> FloorPlan:
        cached = {task.name: record for task in tasks if (record := cached_floor(state, task))}
        return cls(tasks, cached)


def floor_job(run: RunPaths, name: str, owed: list[Task], every: list[Task]) -> PlannedJob:
    """The floor job `name` for the `owed` tasks: an earlier command's job of that name keeps its
    own plan when that plan holds every owed task (so it resumes), else it is planned anew."""
    config = JobConfig.load_if_readable(run.job(name).config_json)
    by_name = {task.name: task for task in every}
    if config is not None:
        earlier = [by_name.get(task.name) for task in config.plan.tasks]
        known = [task for task in earlier if task is not None]
        if len(known) == len(earlier) and {t.name for t in owed} <= {t.name for t in known}:
            owed = known
    layers = sorted({task.layer for task in owed})
    return PlannedJob(name, layers[0] if len(layers) == 1 else "mixed", 1, tuple(owed))


async def compute_floor(
    scope: RunScope,
    services: JobServices,
    run_job: JobRunner,
    executor: Executor,
    say: Callable[[str], None],
) -> JobOutcome | None:
    """Run the owed floor trials and write `<run>/floor.json`; the floor job's outcome (None:
    every floor was cached)."""
    assert scope.run is not None
    run, state = scope.run.paths, services.state.paths
    plan = FloorPlan.of(state, run_tasks(scope.jobs))
    owed = plan.owed
    outcome = None
    if owed:
        say(
            f"do-nothing floor: {plural(len(owed), 'task')} of {len(plan.tasks)} not cached; "
            f"one trial each with every seat on the null endpoint (in {run.job(FLOOR_JOB).root}, "
            "never counted in the rates)"
        )
        outcome = await _run_floor_job(scope, services, run_job, executor, owed)
    document = run_floor(plan, outcome, state)
    document.write(run.floor_json)
    say(floor_line(document))
    return outcome


async def _run_floor_job(
    scope: RunScope,
    services: JobServices,
    run_job: JobRunner,
    executor: Executor,
    owed: list[Task],
) -> JobOutcome | None:
    assert scope.run is not None
    run = scope.run.paths
    floor_services = replace(services, condition=services.condition.do_nothing(), jobs_dir=run.root)
    every = run_tasks(scope.jobs)
    for number in range(1, MAX_FLOOR_JOBS + 1):
        name = FLOOR_JOB if number == 1 else f"{FLOOR_JOB}-{number}"
        try:
            planned = floor_job(run, name, owed, every)
            return await run_job(planned, floor_services, executor=executor)
        except JobConfigMismatch:  # an earlier command's floor job, planned otherwise
            continue
    return None


def run_floor(plan: FloorPlan, outcome: JobOutcome | None, state: StatePaths) -> RunFloor:
    """Every task's floor: the cache's, else this run's trial's (cached when it scored)."""
    tasks: dict[str, TaskFloor] = {}
    results = {} if outcome is None else {r.task_name: r for r in outcome.results}
    for task in plan.tasks:
        record = plan.cached.get(task.name)
        if record is not None:
            tasks[task.name] = TaskFloor(
                contract_digest=task.contract_digest,
                reward=record.reward,
                source="cache",
                trial=record.trial,
            )
            continue
        result = results.get(task.name)
        if result is None or outcome is None:
            continue  # never ran (interrupted): neither known nor unknown yet
        trial = str(outcome.path / result.trial_name)
        scored = result.status is TrialStatus.SCORED and result.reward is not None
        if scored:
            cache_floor(state, task, result, trial)
        tasks[task.name] = TaskFloor(
            contract_digest=task.contract_digest,
            reward=result.reward if scored else None,
            source="trial",
            trial=trial,
        )
    return RunFloor(tasks=tasks)


def floor_line(document: RunFloor) -> str:
    """`do-nothing floor: 0.33 over 3 tasks; a do-nothing agent passes fyi-mention-silence`."""
    known = {name: t.reward for name, t in document.tasks.items() if t.reward is not None}
    unknown = sorted(name for name, t in document.tasks.items() if t.reward is None)
    if not known:
        mean = "unknown"
    else:
        mean = f"{sum(known.values()) / len(known):.2f} over {plural(len(known), 'task')}"
    passing = sorted(name for name, t in document.tasks.items() if t.passes)
    parts = [f"do-nothing floor: {mean}"]
    if passing:
        parts.append(f"a do-nothing agent passes {', '.join(passing)}")
    if unknown:
        parts.append(f"unknown (the floor trial did not score): {', '.join(unknown)}")
    return "; ".join(parts)
