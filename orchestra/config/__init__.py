"""Manifest, endpoint-config, task and fixture loading (orchestrator.md §3, §4, §6; dataset.md §2.2).

Every problem is a `ConfigError` whose `str()` is one line naming the file, the field and the
problem; several found at once arrive as `ConfigErrors` (iterate `.errors`).
"""

from orchestra.config.condition import Condition, condition_problems, load_condition
from orchestra.config.endpoints import Endpoint, EndpointConfig, load_endpoint_config
from orchestra.config.errors import ConfigError, ConfigErrors
from orchestra.config.fixture import Fixture, load_fixture
from orchestra.config.manifest import (
    AgentSlot,
    ArtifactHashMismatch,
    Manifest,
    RosterEntry,
    load_manifest,
    read_artifact,
)
from orchestra.config.task import Task, load_task, task_digest

__all__ = [
    "AgentSlot",
    "ArtifactHashMismatch",
    "Condition",
    "ConfigError",
    "ConfigErrors",
    "Endpoint",
    "EndpointConfig",
    "Fixture",
    "Manifest",
    "RosterEntry",
    "Task",
    "condition_problems",
    "load_condition",
    "load_endpoint_config",
    "load_fixture",
    "load_manifest",
    "load_task",
    "read_artifact",
    "task_digest",
]
