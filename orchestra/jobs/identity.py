"""The replay identity: what must match for a job to be resumed (orchestrator.md §2.5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestra.config.canonical import canonical_sha256
from orchestra.config.condition import Condition
from orchestra.config.task import Task


def replay_components(
    condition: Condition, environment: str, attempts: int, tasks: Sequence[Task]
) -> dict[str, Any]:
    """The measurement-relevant fields; nothing else (not -n, paths, stack mode, key values)."""
    return {
        "condition": condition.manifest_sha256,
        "endpoints": condition.replay_fingerprint(),
        "environment": environment,
        "attempts": attempts,
        "tasks": [{"name": task.name, "digest": task.digest} for task in tasks],
    }


def replay_record(components: dict[str, Any]) -> dict[str, Any]:
    """`{sha256, fields}`: the identity hash, and one hash per field so a mismatch can be named
    without writing endpoint env values into the job's config."""
    return {
        "sha256": canonical_sha256(components),
        "fields": {name: canonical_sha256(value) for name, value in sorted(components.items())},
    }


def differing_fields(stored: Any, current: dict[str, Any]) -> list[str]:
    """Names of the fields that differ; `["replay_identity"]` when the stored record is unusable."""
    if not isinstance(stored, dict) or not isinstance(stored.get("fields"), dict):
        return ["replay_identity"]
    if stored.get("sha256") == current["sha256"]:
        return []
    fields = stored["fields"]
    changed = [name for name, value in current["fields"].items() if fields.get(name) != value]
    return changed or ["replay_identity"]
