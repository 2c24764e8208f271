"""Task discovery, selection and layer planning (orchestrator.md §2.3), and the dry-run text (§2.4)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path

from orchestra.config.condition import Condition
from orchestra.config.endpoints import API_KEY_FALLBACKS, resolve_api_key
from orchestra.config.errors import ConfigError, display_path, raise_if_any
from orchestra.config.task import (
    LAYER_DEFAULT_ATTEMPTS,
    LAYERS,
    Task,
    lacking_task_toml,
    load_task,
)
from orchestra.documents.job import PlanLayer, PlanRecord
from orchestra.documents.run_config import TaskSelection
from orchestra.documents.trial import TaskRecord
from orchestra.paths import DEFAULT_DATASET, TaskPaths
from orchestra.plural import plural

JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
JOB_STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
_REGISTRY_NAME_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w.-]+)?$")


class PlanError(ConfigError):
    """A selection or planning problem (exit 1); `str()` is the whole one-line message."""

    def __init__(self, message: str, *, file: str = "", field: str = "") -> None:
        super().__init__(file, field, message, message=message)


def describe_selection(selection: TaskSelection) -> str:
    return (
        f"path={', '.join(display_path(path) for path in dataset_paths(selection))}, "
        f"layer={selection.layer or 'any'}, "
        f"include={json.dumps(selection.include)}, exclude={json.dumps(selection.exclude)}"
    )


@dataclass(frozen=True)
class PlannedJob:
    name: str
    layer: PlanLayer
    attempts: int
    tasks: tuple[Task, ...]

    @property
    def n_trials(self) -> int:
        return self.attempts * len(self.tasks)

    def slots(self) -> list[tuple[int, Task]]:
        """(attempt, task) in start order: attempt-major, tasks in plan order (§2.3 item 7)."""
        return [(attempt, task) for attempt in range(1, self.attempts + 1) for task in self.tasks]

    def plan_record(self) -> PlanRecord:
        """The `plan` object of the job's `config.json` (§10.2)."""
        return PlanRecord(
            layer=self.layer,
            attempts=self.attempts,
            tasks=[TaskRecord.model_validate(task.record()) for task in self.tasks],
        )


@dataclass(frozen=True)
class Plan:
    selection: TaskSelection
    jobs: tuple[PlannedJob, ...]
    warnings: tuple[str, ...] = ()

    @property
    def n_trials(self) -> int:
        return sum(job.n_trials for job in self.jobs)


# --- where the tasks come from --------------------------------------------------------------


def dataset_paths(selection: TaskSelection) -> list[Path]:
    """The task or dataset directories the selection names (default `tasks/buzz-native`)."""
    return list(selection.paths) or [DEFAULT_DATASET]


def dataset_dir(dataset: str) -> Path:
    """`--dataset`: a local directory; a registry name is refused (`PlanError`)."""
    candidate = Path(dataset)
    if not candidate.exists() and _REGISTRY_NAME_RE.match(dataset):
        raise PlanError("registry datasets are not supported; pass a local directory")
    return candidate


def discover_tasks(*paths: Path) -> list[Task]:
    """Every task under each of `paths` (a task or dataset directory), validated, in the order
    given; all problems are raised together, a task name two directories share among them
    (§2.3 items 1–3)."""
    task_dirs: list[Path] = []
    for path in paths:
        task_dirs += [found for found in _task_dirs(path) if found not in task_dirs]
    errors: list[ConfigError] = []
    tasks: list[Task] = []
    for task_dir in task_dirs:
        try:
            tasks.append(load_task(task_dir))
        except ConfigError as exc:
            errors.extend(exc.errors)
    first_dir: dict[str, Path] = {}
    for task in tasks:
        other = first_dir.setdefault(task.name, task.dir)
        if other != task.dir:
            errors.append(
                PlanError(
                    f'duplicate task name "{task.name}" in {display_path(other)} '
                    f"and {display_path(task.dir)}",
                    file=display_path(task.dir),
                )
            )
    raise_if_any(errors)
    return tasks


def _task_dirs(path: Path) -> list[Path]:
    shown = display_path(path)
    if not path.exists():
        raise PlanError(f"{shown}: does not exist", file=shown)
    if not path.is_dir():
        raise PlanError(f"{shown}: is not a directory", file=shown)
    if (path / "task.toml").is_file():
        return [path]
    return sorted((child for child in path.iterdir() if _is_task_dir(child)), key=lambda p: p.name)


def _is_task_dir(child: Path) -> bool:
    return not child.name.startswith(".") and child.is_dir() and (child / "task.toml").is_file()


def matches_glob(task: Task, pattern: str) -> bool:
    """Case-sensitive shell-style match against the full name or the directory basename."""
    return fnmatchcase(task.name, pattern) or fnmatchcase(task.short_name, pattern)


def select_tasks(tasks: Sequence[Task], selection: TaskSelection) -> tuple[list[Task], list[str]]:
    """Filter by layer, then include globs, then exclude globs (§2.3 item 4)."""
    warnings: list[str] = []
    selected = [t for t in tasks if selection.layer is None or t.layer == selection.layer]
    if selection.include:
        for pattern in selection.include:
            if not any(matches_glob(task, pattern) for task in selected):
                warnings.append(f'include glob "{pattern}" matched no task')
        selected = [t for t in selected if any(matches_glob(t, p) for p in selection.include)]
    selected = [t for t in selected if not any(matches_glob(t, p) for p in selection.exclude)]
    if not selected:
        raise PlanError(
            f"no tasks selected ({describe_selection(selection)}){_why_none(tasks, selection)}"
        )
    return selected, warnings


def _why_none(tasks: Sequence[Task], selection: TaskSelection) -> str:
    """The `task.toml` a directory that looks like a task lacks, when that explains an empty
    selection (discovery ignores such directories, §2.3 item 1)."""
    paths = dataset_paths(selection)
    lacking = [found for path in paths for found in lacking_task_toml(path)]
    if tasks:  # the filters removed every task: did a glob name a directory without task.toml?
        lacking = [d for d in lacking if any(fnmatchcase(d.name, p) for p in selection.include)]
    elif not lacking:
        where = ", ".join(display_path(path) for path in paths)
        return f": no task.toml in {where} or in any directory directly under it"
    if not lacking:
        return ""
    return ": " + "; ".join(
        f"{display_path(TaskPaths(d).task_toml)}: file not found" for d in lacking
    )


# --- jobs ------------------------------------------------------------------------------------


def job_base_name(condition: str, job_name: str | None, now: datetime | None = None) -> str:
    """`--job-name`, or `<condition>-<UTC stamp>` (§2.2)."""
    if job_name is not None:
        check_job_name(job_name, option="--job-name")
        return job_name
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime(JOB_STAMP_FORMAT)
    return f"{condition}-{stamp}"


def check_job_name(name: str, *, option: str = "job name") -> None:
    if not JOB_NAME_RE.match(name):
        raise PlanError(
            f"{option} {json.dumps(name)} must match ^[A-Za-z0-9][A-Za-z0-9._-]{{0,127}}$"
        )


def plan_jobs(
    tasks: Sequence[Task], attempts: int | None, base_name: str
) -> tuple[PlannedJob, ...]:
    """One job, or one job per layer in `LAYERS` order, e.g. regression then workflow (§2.3
    item 6; Harbor tasks of the `harbor` layer make a third)."""
    if attempts is not None and attempts < 1:
        raise PlanError(f"--attempts must be an integer >= 1 (got {attempts})")
    layers = [layer for layer in LAYERS if any(task.layer == layer for task in tasks)]
    if attempts is not None or len(layers) == 1:
        layer: PlanLayer = layers[0] if len(layers) == 1 else "mixed"
        k = attempts if attempts is not None else LAYER_DEFAULT_ATTEMPTS[layers[0]]
        jobs: tuple[PlannedJob, ...] = (PlannedJob(base_name, layer, k, tuple(tasks)),)
    else:
        jobs = tuple(
            PlannedJob(
                f"{base_name}-{layer}",
                layer,
                LAYER_DEFAULT_ATTEMPTS[layer],
                tuple(task for task in tasks if task.layer == layer),
            )
            for layer in layers
        )
    for job in jobs:
        check_job_name(job.name)
    return jobs


def make_plan(selection: TaskSelection, base_name: str) -> Plan:
    """Discover, validate, filter and plan; raises `ConfigError` on any problem."""
    tasks = discover_tasks(*dataset_paths(selection))
    selected, warnings = select_tasks(tasks, selection)
    plan = plan_jobs(selected, selection.attempts, base_name)
    return Plan(selection, plan, tuple(warnings))


# --- dry run ---------------------------------------------------------------------------------


def render_dry_run(
    plan: Plan,
    condition: Condition,
    *,
    stack_mode: str,
    env_mode: str,
    environ: Mapping[str, str],
    run: str | None = None,
) -> str:
    """The `--dry-run` report (§2.4). Key *names* only: values never appear.

    `stack_mode`/`env_mode` are what `auto` resolved to, described by the caller,
    e.g. `embedded (auto: no Docker engine)`; `run` names the run the command would start or
    resume.
    """
    lines = ["Dry run: configuration is valid; nothing was started or written.", ""]
    if run is not None:
        lines += [f"Run        {run}", ""]
    lines.append(f"Condition  {condition.name}")
    lines.append(f"  manifest  {display_path(condition.manifest_path)}")
    lines.append(f"  hash      {condition.manifest_sha256}")
    if condition.is_oracle:
        lines.append(
            "  ORACLE condition: agents replay the reference solutions; "
            "scores measure the pipeline, not a model."
        )
    lines.append(f"Endpoints  ({display_path(condition.endpoint_config.path)})")
    warnings = list(plan.warnings)
    for name, endpoint in condition.used_endpoints().items():
        key = endpoint.api_key_env
        if key is None:
            status = "no API key"
        elif resolve_api_key(key, environ):
            used = key if environ.get(key) else API_KEY_FALLBACKS[key]
            status = f"API key from ${used}"
        else:
            status = f"API key ${key} NOT SET"
            warnings.append(f"${key} is not set (endpoint {name}); a real run would stop here")
        where = f"  base_url={endpoint.base_url}" if endpoint.base_url else ""
        model = f"  model={endpoint.model}" if endpoint.model else ""
        lines.append(f"  {name}  provider={endpoint.provider}{model}{where}  {status}")
    lines.append(f"Stack      {stack_mode}")
    lines.append(f"Env        {env_mode}")
    lines.append("")
    for number, job in enumerate(plan.jobs, start=1):
        lines.append(
            f"Job {number}/{len(plan.jobs)}  {job.name}  layer={job.layer}  k={job.attempts}  "
            f"{plural(len(job.tasks), 'task')} × {job.attempts} = {plural(job.n_trials, 'trial')}"
        )
        lines.extend(f"  {task.name}  ({task.layer})" for task in job.tasks)
    if len(plan.jobs) > 1:
        lines.append(
            "Jobs run one after the other; the second starts only after the first finished."
        )
    lines.append(f"Total: {plural(len(plan.jobs), 'job')}, {plural(plan.n_trials, 'trial')}")
    lines.extend(f"warning: {text}" for text in warnings)
    return "\n".join(lines) + "\n"
