"""A job directory: its config, the trials it already holds, and what it still owes (§2.5, §10)."""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from orchestra.jobs.identity import differing_fields
from orchestra.jobs.jsonio import read_json_object, utc_timestamp, write_json_atomic
from orchestra.paths import JobPaths


class JobConfigMismatch(Exception):
    """The job exists with another replay identity (exit 1)."""


def orchestrator_version() -> str:
    try:
        return version("buzz-orchestra")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class ExistingTrial:
    name: str
    path: Path
    task_name: str | None
    attempt: int | None
    status: str | None  # None: no readable result.json (the process died)
    result: dict[str, Any] | None


@dataclass
class Inventory:
    """Trials kept per slot, and the slots still owed, in plan order."""

    kept: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    owed: list[tuple[int, str]] = field(default_factory=list)  # (attempt, task name)
    superseded: list[str] = field(default_factory=list)


def scan_trials(paths: JobPaths) -> list[ExistingTrial]:
    trials = []
    if not paths.root.is_dir():
        return trials
    for child in sorted(paths.root.iterdir()):
        if not child.is_dir() or child.name.startswith("."):
            continue
        result = read_json_object(child / "result.json")
        config = read_json_object(child / "config.json") or {}
        source = result or config
        task = source.get("task_name") or (config.get("task") or {}).get("name")
        attempt = source.get("attempt")
        trials.append(
            ExistingTrial(
                name=child.name,
                path=child,
                task_name=task if isinstance(task, str) else None,
                attempt=attempt if isinstance(attempt, int) else None,
                status=result.get("status") if result else None,
                result=result,
            )
        )
    return trials


def take_inventory(
    paths: JobPaths, slots: list[tuple[int, str]], *, keep_errors: bool
) -> Inventory:
    """Keep scored trials (and errors with `keep_errors`); move everything else aside.

    A superseded trial directory is moved to `.superseded/`, never deleted.
    """
    inventory = Inventory()
    wanted = {(task, attempt) for attempt, task in slots}
    for trial in scan_trials(paths):
        slot = (trial.task_name, trial.attempt)
        keep = trial.status == "scored" or (keep_errors and trial.status == "error")
        if keep and slot in wanted and slot not in inventory.kept and trial.result is not None:
            inventory.kept[slot] = trial.result  # type: ignore[index]
            continue
        target = paths.superseded(trial.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(trial.path), str(target))
        inventory.superseded.append(trial.name)
    inventory.owed = [(a, t) for a, t in slots if (t, a) not in inventory.kept]
    return inventory


def open_job(
    paths: JobPaths, config: dict[str, Any], *, slots: list[tuple[int, str]], keep_errors: bool
) -> tuple[dict[str, Any], Inventory, bool]:
    """Create the job, or resume it when the replay identity matches.

    Returns (the job config as stored, the inventory, whether this is a resume).
    """
    existing = read_json_object(paths.config_json)
    if existing is None:
        paths.root.mkdir(parents=True, exist_ok=True)
        config = {
            **config,
            "schema_version": 1,
            "id": str(uuid.uuid4()),
            "created_at": utc_timestamp(),
            "orchestrator_version": orchestrator_version(),
            "resumes": [],
        }
        write_json_atomic(paths.config_json, config)
        return config, take_inventory(paths, slots, keep_errors=keep_errors), False
    changed = differing_fields(existing.get("replay_identity"), config["replay_identity"])
    if changed:
        raise JobConfigMismatch(
            f"job {paths.name} exists with a different configuration ({', '.join(changed)}); "
            "choose another --job-name"
        )
    inventory = take_inventory(paths, slots, keep_errors=keep_errors)
    existing.setdefault("resumes", []).append(
        {"at": utc_timestamp(), "owed_trials": len(inventory.owed)}
    )
    write_json_atomic(paths.config_json, existing)
    return existing, inventory, True
