"""Shared constants and types of the docker tests (a plain module: `tests/docker` is not a
package, so that it can never shadow the `docker` SDK package)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestra.paths import PROJECT_ROOT, StatePaths
from orchestra.stack.wheelhouse import Wheelhouse

TASK_DIR = PROJECT_ROOT / "tasks" / "buzz-native" / "reply-to-thread"


@dataclass(frozen=True)
class BuiltImages:
    state: StatePaths
    relay_image: str
    task_image: str
    agent_image: str
    wheelhouse: Wheelhouse
