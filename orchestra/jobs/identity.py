"""The replay identity: what must match for a job to be resumed (orchestrator.md §2.5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestra.config.canonical import canonical_sha256
from orchestra.config.condition import Condition
from orchestra.config.task import Task
from orchestra.documents.enums import EnvKind
from orchestra.documents.job import ReplayIdentity


def replay_components(
    condition: Condition, environment: EnvKind, attempts: int, tasks: Sequence[Task]
) -> dict[str, Any]:
    """The measurement-relevant fields; nothing else (not -n, paths, stack mode, key values)."""
    return {
        "condition": condition.manifest_sha256,
        "endpoints": condition.replay_fingerprint(),
        "environment": environment,
        "attempts": attempts,
        "tasks": [{"name": task.name, "digest": task.digest} for task in tasks],
    }


def replay_record(components: dict[str, Any]) -> ReplayIdentity:
    """The identity hash, and one hash per field so a mismatch can be named without writing
    endpoint env values into the job's config."""
    return ReplayIdentity(
        sha256=canonical_sha256(components),
        fields={name: canonical_sha256(value) for name, value in sorted(components.items())},
    )


def differing_fields(stored: ReplayIdentity, current: ReplayIdentity) -> list[str]:
    """Names of the fields that differ (`["replay_identity"]` when only the hash does)."""
    if stored.sha256 == current.sha256:
        return []
    changed = [name for name, value in current.fields.items() if stored.fields.get(name) != value]
    return changed or ["replay_identity"]
