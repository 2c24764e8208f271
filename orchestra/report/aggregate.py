"""Aggregation of trial results per condition, layer and task (orchestrator.md §11.1)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from math import comb
from typing import Any

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
    trials: list[dict[str, Any]] = field(default_factory=list)
    oracle: bool = False  # the roster runs the built-in oracle, not a model


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator 1 - C(n-c, k) / C(n, k), for 1 <= k <= n."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def _succeeded(trial: dict[str, Any]) -> bool:
    reward = trial.get("reward")
    return (
        trial.get("status") == "scored"
        and isinstance(reward, int | float)
        and (reward >= SUCCESS_THRESHOLD)
    )


def _seconds(trial: dict[str, Any]) -> float | None:
    try:
        start = datetime.fromisoformat(str(trial["started_at"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(trial["finished_at"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds()


def _usage(trials: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Tokens and cost summed over trials that started agents (any status: cost was incurred)."""
    billed = [t for t in trials if isinstance(t.get("tokens"), dict)]
    tokens = {
        key: sum(int(t["tokens"].get(key) or 0) for t in billed)
        for key in ("input", "cached_input", "output")
    }
    cost = sum(float(t.get("cost_usd") or 0.0) for t in billed)
    times = [s for s in (_seconds(t) for t in trials if t.get("finished_at")) if s is not None]
    return {
        "tokens": tokens,
        "cost_usd": cost,
        "mean_cost_usd": cost / len(billed) if billed else None,
        "mean_trial_seconds": sum(times) / len(times) if times else None,
    }


def _rates(trials: Sequence[dict[str, Any]], planned: int) -> dict[str, Any]:
    scored = [t for t in trials if t.get("status") == "scored"]
    rewards = [float(t.get("reward") or 0.0) for t in scored]
    successes = sum(1 for t in trials if _succeeded(t))
    return {
        "planned": planned,
        "scored": len(scored),
        "errors": sum(1 for t in trials if t.get("status") == "error"),
        "cancelled": sum(1 for t in trials if t.get("status") == "cancelled"),
        "pass_rate": sum(rewards) / len(rewards) if rewards else None,
        "pass_rate_all": successes / planned if planned else None,
    }


def _task_summary(trials: Sequence[dict[str, Any]], planned: int, k: int) -> dict[str, Any]:
    summary = _rates(trials, planned)
    scored = [t for t in trials if t.get("status") == "scored"]
    n, c = len(scored), sum(1 for t in scored if _succeeded(t))
    summary["incomplete"] = n < k
    summary["pass_at_k"] = None if n < k else {"k": k, "value": pass_at_k(n, c, k)}
    failing: dict[str, int] = {}
    for trial in scored:
        for name, value in sorted((trial.get("rewards") or {}).items()):
            if name != "reward" and isinstance(value, int | float) and value < 1.0:
                failing[name] = failing.get(name, 0) + 1
    summary["failing_dimensions"] = failing
    summary.update(_usage(trials))
    return summary


def _group_summary(
    tasks: dict[str, dict[str, Any]], trials: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    summary = _rates(trials, sum(task["planned"] for task in tasks.values()))
    with_pass_at_k = [task["pass_at_k"]["value"] for task in tasks.values() if task["pass_at_k"]]
    summary["pass_at_k"] = (
        {"value": sum(with_pass_at_k) / len(with_pass_at_k), "n_tasks": len(with_pass_at_k)}
        if with_pass_at_k
        else None
    )
    summary["n_tasks"] = len(tasks)
    summary.update(_usage(trials))
    return summary


def _trial_layer(trial: dict[str, Any], fallback: str) -> str:
    return str(trial.get("layer") or fallback)


def aggregate(jobs: Iterable[JobRecord]) -> dict[str, Any]:
    """The `--json` document of §11.2: `{conditions: [...]}`."""
    by_condition: dict[tuple[str, str], list[JobRecord]] = {}
    for job in jobs:
        by_condition.setdefault((job.condition, job.manifest_sha256), []).append(job)
    conditions = []
    for (condition, manifest_sha256), records in by_condition.items():
        planned: dict[tuple[str, str], int] = {}
        attempts: dict[tuple[str, str], int] = {}
        trials_of: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for job in records:
            layer_of = {task.name: task.layer for task in job.tasks}
            for task in job.tasks:
                key = (task.layer, task.name)
                planned[key] = planned.get(key, 0) + job.attempts
                attempts[key] = max(attempts.get(key, 0), job.attempts)
                trials_of.setdefault(key, [])
            for trial in job.trials:
                name = str(trial.get("task_name"))
                key = (_trial_layer(trial, layer_of.get(name, "unknown")), name)
                trials_of.setdefault(key, []).append(trial)
                planned.setdefault(key, 0)
                attempts.setdefault(key, job.attempts)
        layers: dict[str, Any] = {}
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
            layers[layer] = {"tasks": tasks, **_group_summary(tasks, layer_trials)}
        all_tasks = {
            name: task for layer in layers.values() for name, task in layer["tasks"].items()
        }
        all_trials = [t for ts in trials_of.values() for t in ts]
        conditions.append(
            {
                "condition": condition,
                "manifest_sha256": manifest_sha256,
                "oracle": any(job.oracle for job in records),
                "jobs": [{"name": job.name, "path": job.path} for job in records],
                "layers": layers,
                "totals": _group_summary(all_tasks, all_trials),
                "error_types": _error_types(all_trials),
            }
        )
    return {"conditions": conditions}


def _error_types(trials: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for trial in trials:
        if trial.get("status") in ("error", "cancelled"):
            info = trial.get("exception_info") or {}
            kind = str(info.get("exception_type") or trial.get("status"))
            errors.setdefault(kind, []).append(str(trial.get("trial_name")))
    return errors
