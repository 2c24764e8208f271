"""Aggregation of trial results per condition, layer and task (orchestrator.md §11.1)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from math import comb
from pathlib import Path

from orchestra.documents.enums import TrialStatus
from orchestra.documents.job import JobConfig, PlanRecord
from orchestra.documents.summary import (
    ConditionSummary,
    GroupPassAtK,
    GroupSummary,
    JobRef,
    LayerSummary,
    Rates,
    Summary,
    TaskPassAtK,
    TaskSummary,
    UsageSummary,
)
from orchestra.documents.trial import TokenCounts, TrialResult

SUCCESS_THRESHOLD = 1.0 - 1e-9
LAYER_ORDER = ("regression", "workflow")


@dataclass(frozen=True)
class PlannedTask:
    name: str
    layer: str


@dataclass
class JobRecord:
    """One job as read from its directory: the plan and the trial results it holds."""

    name: str
    path: str
    condition: str
    manifest_sha256: str
    attempts: int
    tasks: list[PlannedTask]
    trials: list[TrialResult] = field(default_factory=list)
    oracle: bool = False  # the roster runs the built-in oracle, not a model
    started: bool = True  # False: a job of a run's plan whose directory does not exist yet
    stopped: str | None = None  # the job result's early stop, if any (issue 13)
    stop_message: str | None = None
    spent_usd: float | None = None

    @classmethod
    def from_config(cls, config: JobConfig, path: Path) -> JobRecord:
        """The plan part of the record (no trials yet)."""
        return cls.of_plan(
            config.job_name, path, config.manifest.condition, config.manifest.sha256,
            config.plan, oracle=config.is_oracle,
        )  # fmt: skip

    @classmethod
    def of_plan(
        cls,
        name: str,
        path: Path,
        condition: str,
        manifest_sha256: str,
        plan: PlanRecord,
        *,
        oracle: bool,
        started: bool = True,
    ) -> JobRecord:
        return cls(
            name=name,
            path=str(path),
            condition=condition,
            manifest_sha256=manifest_sha256,
            attempts=plan.attempts,
            tasks=[PlannedTask(task.name, task.layer) for task in plan.tasks],
            oracle=oracle,
            started=started,
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator 1 - C(n-c, k) / C(n, k), for 1 <= k <= n."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def metric_passed(value: float | None) -> bool:
    """A metric (or the reward) holds when it is ≥ 1.0 − 1e-9, as §11.1 defines success."""
    return value is not None and value >= SUCCESS_THRESHOLD


def succeeded(trial: TrialResult) -> bool:
    """Scored with a reward that holds (§11.1)."""
    return trial.status is TrialStatus.SCORED and metric_passed(trial.reward)


def seconds_between(start: str, end: str) -> float:
    started = datetime.fromisoformat(start.replace("Z", "+00:00"))
    finished = datetime.fromisoformat(end.replace("Z", "+00:00"))
    return (finished - started).total_seconds()


def token_totals(trials: Iterable[TrialResult]) -> tuple[TokenCounts, float]:
    """Tokens and cost summed over trials that started agents (any status: cost was incurred)."""
    billed = [(t.tokens, t.cost_usd) for t in trials if t.tokens is not None]
    tokens = TokenCounts(
        input=sum(tokens.input for tokens, _ in billed),
        cached_input=sum(tokens.cached_input for tokens, _ in billed),
        output=sum(tokens.output for tokens, _ in billed),
    )
    return tokens, sum(cost or 0.0 for _, cost in billed)


def _usage(trials: Sequence[TrialResult]) -> UsageSummary:
    tokens, cost = token_totals(trials)
    billed = sum(1 for t in trials if t.tokens is not None)
    times = [seconds_between(t.started_at, t.finished_at) for t in trials if t.finished_at]
    return UsageSummary(
        tokens=tokens,
        cost_usd=cost,
        mean_cost_usd=cost / billed if billed else None,
        mean_trial_seconds=sum(times) / len(times) if times else None,
    )


def _rates(trials: Sequence[TrialResult], planned: int) -> Rates:
    scored = [t for t in trials if t.status is TrialStatus.SCORED]
    rewards = [t.reward or 0.0 for t in scored]
    successes = sum(1 for t in trials if succeeded(t))
    return Rates(
        planned=planned,
        scored=len(scored),
        errors=sum(1 for t in trials if t.status is TrialStatus.ERROR),
        cancelled=sum(1 for t in trials if t.status is TrialStatus.CANCELLED),
        running=sum(1 for t in trials if t.status is TrialStatus.RUNNING),
        not_started=max(0, planned - len(trials)),
        pass_rate=sum(rewards) / len(rewards) if rewards else None,
        pass_rate_all=successes / planned if planned else None,
    )


def _task_summary(trials: Sequence[TrialResult], planned: int, k: int) -> TaskSummary:
    scored = [t for t in trials if t.status is TrialStatus.SCORED]
    n, c = len(scored), sum(1 for t in scored if succeeded(t))
    failing: dict[str, int] = {}
    for trial in scored:
        for name, value in sorted((trial.rewards or {}).items()):
            if name != "reward" and value < 1.0:
                failing[name] = failing.get(name, 0) + 1
    return TaskSummary(
        **dict(_rates(trials, planned)),
        **dict(_usage(trials)),
        incomplete=n < k,
        pass_at_k=None if n < k else TaskPassAtK(k=k, value=pass_at_k(n, c, k)),
        failing_dimensions=failing,
    )


def _group_summary(tasks: dict[str, TaskSummary], trials: Sequence[TrialResult]) -> GroupSummary:
    with_pass_at_k = [task.pass_at_k.value for task in tasks.values() if task.pass_at_k]
    return GroupSummary(
        **dict(_rates(trials, sum(task.planned for task in tasks.values()))),
        **dict(_usage(trials)),
        pass_at_k=GroupPassAtK(
            value=sum(with_pass_at_k) / len(with_pass_at_k), n_tasks=len(with_pass_at_k)
        )
        if with_pass_at_k
        else None,
        n_tasks=len(tasks),
    )


def aggregate(jobs: Iterable[JobRecord]) -> Summary:
    """The `--json` document of §11.2: `{conditions: [...]}`."""
    by_condition: dict[tuple[str, str], list[JobRecord]] = {}
    for job in jobs:
        by_condition.setdefault((job.condition, job.manifest_sha256), []).append(job)
    conditions = []
    for (condition, manifest_sha256), records in by_condition.items():
        planned: dict[tuple[str, str], int] = {}
        attempts: dict[tuple[str, str], int] = {}
        trials_of: dict[tuple[str, str], list[TrialResult]] = {}
        for job in records:
            for task in job.tasks:
                key = (task.layer, task.name)
                planned[key] = planned.get(key, 0) + job.attempts
                attempts[key] = max(attempts.get(key, 0), job.attempts)
                trials_of.setdefault(key, [])
            for trial in job.trials:
                key = (trial.layer, trial.task_name)
                trials_of.setdefault(key, []).append(trial)
                planned.setdefault(key, 0)
                attempts.setdefault(key, job.attempts)
        layers: dict[str, LayerSummary] = {}
        layer_names = sorted(
            {layer for layer, _ in trials_of},
            key=lambda n: (LAYER_ORDER.index(n) if n in LAYER_ORDER else len(LAYER_ORDER), n),
        )
        for layer in layer_names:
            keys = sorted(key for key in trials_of if key[0] == layer)
            tasks = {
                name: _task_summary(
                    trials_of[(layer, name)], planned[(layer, name)], attempts[(layer, name)]
                )
                for layer, name in keys
            }
            layer_trials = [t for key in keys for t in trials_of[key]]
            layers[layer] = LayerSummary(**dict(_group_summary(tasks, layer_trials)), tasks=tasks)
        all_tasks = {name: task for layer in layers.values() for name, task in layer.tasks.items()}
        all_trials = [t for ts in trials_of.values() for t in ts]
        conditions.append(
            ConditionSummary(
                condition=condition,
                manifest_sha256=manifest_sha256,
                oracle=any(job.oracle for job in records),
                jobs=[
                    JobRef(
                        name=job.name,
                        path=job.path,
                        started=job.started,
                        stopped=job.stopped,
                        stop_message=job.stop_message,
                        spent_usd=job.spent_usd,
                    )
                    for job in records
                ],
                layers=layers,
                totals=_group_summary(all_tasks, all_trials),
                error_types=_error_types(all_trials),
            )
        )
    return Summary(conditions=conditions)


def _error_types(trials: Sequence[TrialResult]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for trial in trials:
        kind = trial.error_type
        if kind is not None:
            errors.setdefault(kind, []).append(trial.trial_name)
    return errors
