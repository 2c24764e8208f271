"""Docker-engine fixtures. Every image is built once per session, from one state dir.

Tests marked `docker` need a running engine and the base images of
testbed/build-base-images.sh (or a registry to pull them from); .ci/run provides both.
Without an engine they are skipped with that reason.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator

import pytest
from docker_support import TASK_DIR, BuiltImages

from orchestra.config.task import load_task
from orchestra.paths import StatePaths
from orchestra.stack.images import ImageBuilder
from orchestra.trial.env.container import cleanup_containers

TEST_JOB_PREFIX = "bo-pytest-"


def engine_answers() -> bool:
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


@pytest.fixture(scope="session")
def docker_engine() -> None:
    if not engine_answers():
        pytest.skip("no Docker engine answers `docker info` (.ci/run starts one)")


@pytest.fixture(scope="session")
def built(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> BuiltImages:
    """The relay image and reply-to-thread's task image and agent layer (one wheelhouse)."""
    state = StatePaths(tmp_path_factory.mktemp("state"))

    async def build() -> BuiltImages:
        builder = ImageBuilder(state)
        task = load_task(TASK_DIR)
        relay = await builder.relay_image()
        agent = await builder.agent_layer(task)
        task_image = await builder.task_image(task)
        interpreter = await builder.interpreter(task_image, what="test")
        wheelhouse = await builder.wheelhouse(interpreter)
        return BuiltImages(state, relay, task_image, agent, wheelhouse)

    return asyncio.run(build())


@pytest.fixture
async def job_name(docker_engine: None) -> AsyncIterator[str]:
    """A job label of this test only; its containers are removed afterwards."""
    name = f"{TEST_JOB_PREFIX}{uuid.uuid4().hex[:12]}"
    yield name
    await cleanup_containers(name)
