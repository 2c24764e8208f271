"""`report.json`: everything measured in one or more jobs, per trial, task, layer and condition.

The condition / layer / task numbers are the §11 aggregation (`aggregate`), enriched with
per-metric pass counts; the trial entries add what a reader needs to explain a number: every
metric, the verifier's details, the error, the stop reason, usage, durations and the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestra.jobs.jsonio import read_json_object, utc_timestamp, write_json_atomic
from orchestra.paths import JobPaths, TrialPaths
from orchestra.report.aggregate import SUCCESS_THRESHOLD, JobRecord, aggregate
from orchestra.report.load import load_job_record

REPORT_SCHEMA_VERSION = 1
PHASES = ("setup", "agent", "teardown", "evidence", "verify", "finalize")


def metric_passed(value: object) -> bool:
    """A metric (or the reward) holds when it is a number ≥ 1.0 − 1e-9, as §11.1 defines success."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and value >= SUCCESS_THRESHOLD
    )


def _seconds_between(start: object, end: object) -> float | None:
    try:
        started = datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        finished = datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    except ValueError:
        return None
    return round((finished - started).total_seconds(), 6)


def _durations(result: dict[str, Any]) -> dict[str, Any]:
    timings = result.get("timings") if isinstance(result.get("timings"), dict) else {}
    phases = {
        phase: timings[phase].get("seconds")
        for phase in PHASES
        if isinstance(timings.get(phase), dict)
    }
    return {
        "total_seconds": _seconds_between(result.get("started_at"), result.get("finished_at"))
        if result.get("finished_at")
        else None,
        "phase_seconds": phases,
        "agent_active_seconds": timings.get("agent_active_seconds"),
    }


def _agent_ids(result: dict[str, Any], paths: TrialPaths) -> list[str]:
    buzz = result.get("buzz") if isinstance(result.get("buzz"), dict) else {}
    ids = [
        str(agent["agent_id"])
        for agent in buzz.get("agents") or []
        if isinstance(agent, dict) and agent.get("agent_id")
    ]
    if ids:
        return ids
    # An early setup error leaves no agent list; the logs on disk still name the agents.
    return sorted(p.name.removesuffix(".stderr.log") for p in paths.buzz_dir.glob("*.stderr.log"))


def _existing(path: Path) -> str | None:
    return str(path) if path.is_file() else None


def trial_files(result: dict[str, Any], paths: TrialPaths) -> dict[str, Any]:
    """The trial's files that exist, as paths; agent logs per agent id."""
    agents = {
        agent_id: {
            key: value
            for key, value in (
                ("system_prompt", _existing(paths.system_prompt(agent_id))),
                ("stdout", _existing(paths.stdout_log(agent_id))),
                ("stderr", _existing(paths.stderr_log(agent_id))),
                ("events", _existing(paths.events_log(agent_id))),
            )
            if value is not None
        }
        for agent_id in _agent_ids(result, paths)
    }
    singles = {
        "dir": str(paths.root),
        "result_json": _existing(paths.result_json),
        "config_json": _existing(paths.config_json),
        "trial_log": _existing(paths.trial_log),
        "oracle_log": _existing(paths.oracle_log),
        "evidence_json": _existing(paths.evidence_json) or _existing(paths.artifacts_evidence_json),
        "transcript_json": _existing(paths.transcript_json),
        "evidence_error": _existing(paths.evidence_error_txt),
        "reward_json": _existing(paths.reward_json),
        "details_json": _existing(paths.details_json),
        "verifier_stdout": _existing(paths.test_stdout),
    }
    return {**{k: v for k, v in singles.items() if v is not None}, "agents": agents}


def trial_entry(job: JobRecord, result: dict[str, Any]) -> dict[str, Any]:
    paths = JobPaths(Path(job.path)).trial(str(result.get("trial_name")))
    rewards = result.get("rewards") if isinstance(result.get("rewards"), dict) else None
    details = read_json_object(paths.details_json)
    return {
        "job_name": job.name,
        "trial_name": result.get("trial_name"),
        "trial_id": result.get("trial_id"),
        "task_name": result.get("task_name"),
        "short_name": result.get("short_name"),
        "layer": result.get("layer"),
        "attempt": result.get("attempt"),
        "condition": result.get("condition"),
        "manifest_sha256": result.get("manifest_sha256"),
        "status": result.get("status"),
        "phase": result.get("phase"),
        "stop_reason": result.get("stop_reason"),
        "reward": result.get("reward"),
        "succeeded": result.get("status") == "scored" and metric_passed(result.get("reward")),
        "rewards": rewards,
        "failing_metrics": sorted(
            name for name, value in (rewards or {}).items() if not metric_passed(value)
        ),
        "verifier": result.get("verifier"),
        "details": details,
        "exception_info": result.get("exception_info"),
        "budget_exceeded": result.get("budget_exceeded"),
        "tokens": result.get("tokens"),
        "cost_usd": result.get("cost_usd"),
        "accounting": result.get("accounting"),
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
        "durations": _durations(result),
        "files": trial_files(result, paths),
    }


def _trial_order(trial: dict[str, Any]) -> tuple[Any, ...]:
    attempt = trial.get("attempt")
    return (
        str(trial.get("task_name")),
        attempt if isinstance(attempt, int) else 0,
        str(trial.get("trial_name")),
    )


def metric_counts(trials: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per metric over the scored trials: how many held, of how many carried it, and the rate."""
    counts: dict[str, dict[str, Any]] = {}
    for trial in trials:
        if trial["status"] != "scored":
            continue
        for name, value in (trial["rewards"] or {}).items():
            entry = counts.setdefault(name, {"passed": 0, "scored": 0})
            entry["scored"] += 1
            entry["passed"] += metric_passed(value)
    for entry in counts.values():
        entry["rate"] = entry["passed"] / entry["scored"]
    return dict(sorted(counts.items()))


def stop_reason_counts(trials: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How the agent phase ended, over every trial (`none` when it never ended normally)."""
    counts: dict[str, int] = {}
    for trial in trials:
        reason = str(trial["stop_reason"] or "none")
        counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items()))


def _outcomes(trials: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"metrics": metric_counts(trials), "stop_reasons": stop_reason_counts(trials)}


def _add_outcomes(summary: dict[str, Any], trials: Sequence[dict[str, Any]]) -> None:
    """Per task, layer and condition: metric pass counts and stop reasons, beside §11's numbers."""
    for condition in summary["conditions"]:
        of_condition = [
            t
            for t in trials
            if (t["condition"], t["manifest_sha256"])
            == (condition["condition"], condition["manifest_sha256"])
        ]
        for layer_name, layer in condition["layers"].items():
            of_layer = [t for t in of_condition if (t["layer"] or layer_name) == layer_name]
            layer.update(_outcomes(of_layer))
            for task_name, task in layer["tasks"].items():
                task.update(_outcomes([t for t in of_layer if t["task_name"] == task_name]))
        condition["totals"].update(_outcomes(of_condition))


def pending_slots(job: JobRecord) -> list[dict[str, Any]]:
    """Planned (task, attempt) slots with no trial directory: the job stopped before them."""
    started = {(t.get("task_name"), t.get("attempt")) for t in job.trials}
    return [
        {"task_name": task.name, "layer": task.layer, "attempt": attempt}
        for attempt in range(1, job.attempts + 1)
        for task in job.tasks
        if (task.name, attempt) not in started
    ]


def build_report(job_dirs: Sequence[Path]) -> dict[str, Any]:
    """The report document for these job directories (`JobDirError` if one is not a job)."""
    records = [load_job_record(job_dir) for job_dir in job_dirs]
    summary = aggregate(records)
    trials = [
        trial_entry(record, result)
        for record in records
        for result in sorted(record.trials, key=_trial_order)
    ]
    _add_outcomes(summary, trials)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "generated_at": utc_timestamp(),
        "jobs": [
            {
                "name": record.name,
                "path": record.path,
                "condition": record.condition,
                "manifest_sha256": record.manifest_sha256,
                "attempts": record.attempts,
                "oracle": record.oracle,
                "planned_tasks": [{"name": t.name, "layer": t.layer} for t in record.tasks],
                "pending": pending_slots(record),
            }
            for record in records
        ],
        "conditions": summary["conditions"],
        "trials": trials,
    }


def write_report_json(report: dict[str, Any], path: Path) -> None:
    write_json_atomic(path, report)
