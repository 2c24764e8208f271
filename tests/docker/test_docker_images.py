"""Relay image, task image and agent layer builds (orchestrator.md §5.8, §5.9)."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import docker
import pytest
from docker_support import TASK_DIR, BuiltImages

from orchestra.config.task import load_task
from orchestra.paths import CONTAINER_VENV_BIN, PROJECT_ROOT, RepoPaths
from orchestra.stack.images import ImageBuilder, ImageError, base_image_of, wheelhouse_context
from orchestra.trial.env.container import LABEL_JOB, LABEL_TRIAL, TrialContainer

pytestmark = pytest.mark.docker

BASE_IMAGE = "python:3.12-slim-bookworm"
#: Fails the build unless the build container's only interface is loopback.
NETWORK_PROBE_DOCKERFILE = f"""\
FROM {BASE_IMAGE}
COPY wheelhouse /wheelhouse
RUN test "$(ls /sys/class/net)" = "lo" && ls /wheelhouse/buzz_orchestra-*.whl
"""


def test_tags_are_content_digests(built: BuiltImages) -> None:
    assert built.relay_image == f"buzz-orchestra/relay:{built.wheelhouse.short_digest}"
    assert re.fullmatch(r"buzz-orchestra/reply-to-thread:[0-9a-f]{12}", built.task_image)
    assert re.fullmatch(r"buzz-orchestra/reply-to-thread-agent:[0-9a-f]{12}", built.agent_image)
    assert base_image_of(RepoPaths(PROJECT_ROOT).relay_dockerfile) == BASE_IMAGE


def test_wheelhouse_builds_run_without_network(built: BuiltImages, tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(NETWORK_PROBE_DOCKERFILE)
    builder = ImageBuilder(built.state)
    tag = f"buzz-orchestra/pytest-netprobe:{uuid.uuid4().hex[:12]}"
    try:
        builder.build_with_wheelhouse(dockerfile, built.wheelhouse, tag, {}, "network probe")
        assert builder.client.images.get(tag)
        # control: the same build on the default network sees more than loopback (no cache:
        # the network mode is not part of the layer cache key)
        with wheelhouse_context(dockerfile, built.wheelhouse) as context:
            with pytest.raises(ImageError, match="network probe"):
                builder._build(
                    what="network probe",
                    tag=f"{tag}-net",
                    fileobj=context,
                    custom_context=True,
                    nocache=True,
                )
    finally:
        for leftover in (tag, f"{tag}-net"):
            try:
                builder.client.images.remove(leftover, force=True)
            except docker.errors.ImageNotFound:
                pass


def test_relay_image_runs_the_relay_from_its_own_venv(built: BuiltImages) -> None:
    client = docker.from_env()
    output = client.containers.run(
        built.relay_image,
        command=["sh", "-c", "command -v buzz-relay && buzz-relay --help && ls /tmp"],
        network_disabled=True,
        remove=True,
    ).decode()
    assert "/opt/buzz/venv/bin/buzz-relay" in output
    assert "serve" in output
    assert "buzz-wheelhouse" not in output  # the wheelhouse copy is removed
    config = client.images.get(built.relay_image).attrs["Config"]
    assert config["Cmd"] == ["buzz-relay", "serve"]


async def test_agent_layer_runs_buzz_in_a_trial_container(
    built: BuiltImages, job_name: str
) -> None:
    trial_id = str(uuid.uuid4())
    container = await TrialContainer.start(
        built.agent_image, job_name=job_name, trial_id=trial_id, cpus=1, memory_mb=1024
    )
    assert container.name == f"bo-{trial_id[:8]}"
    result = await container.exec([str(CONTAINER_VENV_BIN / "buzz"), "--help"])
    assert "usage" in result.stdout.lower()
    for program in ("buzz-acp", "buzz-agent", "buzz-dev-mcp"):
        await container.exec(["test", "-x", str(CONTAINER_VENV_BIN / program)])
    # the task's own Python is untouched and the workdir of the task image is kept
    untouched = await container.sh("python3 -c 'import orchestra' 2>&1 || echo absent; pwd")
    assert untouched.stdout.split()[-2:] == ["absent", "/workspace"]
    inspected = docker.from_env().containers.get(container.name).attrs
    assert inspected["Config"]["Labels"][LABEL_JOB] == job_name
    assert inspected["Config"]["Labels"][LABEL_TRIAL] == trial_id
    assert inspected["HostConfig"]["NanoCpus"] == 1_000_000_000
    assert inspected["HostConfig"]["Memory"] == 1024 * 1024 * 1024
    assert inspected["HostConfig"]["ExtraHosts"] == ["host.docker.internal:host-gateway"]
    assert inspected["HostConfig"]["Binds"] in (None, [])
    await container.remove()
    await container.remove()  # idempotent


async def test_task_image_without_python_fails_naming_the_task(
    built: BuiltImages, tmp_path: Path
) -> None:
    task_dir = tmp_path / "no-python"
    shutil.copytree(TASK_DIR, task_dir)
    (task_dir / "environment" / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nRUN rm -f /usr/bin/python3* /usr/local/bin/python*\n"
    )
    task = load_task(task_dir)
    builder = ImageBuilder(built.state)
    image = await builder.task_image(task)
    try:
        with pytest.raises(ImageError, match=r"task buzz-native/reply-to-thread: image .* python3"):
            await builder.agent_layer(task)
    finally:
        builder.client.images.remove(image, force=True)


async def test_a_failing_task_build_names_the_task(built: BuiltImages, tmp_path: Path) -> None:
    task_dir = tmp_path / "broken"
    shutil.copytree(TASK_DIR, task_dir)
    (task_dir / "environment" / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN exit 7\n")
    with pytest.raises(ImageError, match=r"task buzz-native/reply-to-thread: image: build failed"):
        await ImageBuilder(built.state).task_image(load_task(task_dir))


def test_superseded_builds_are_removed_unless_in_use(built: BuiltImages) -> None:
    builder = ImageBuilder(built.state)
    client = builder.client
    source = client.containers.create(BASE_IMAGE, command=["true"])
    try:  # two older "builds": distinct images whose only tag is in the relay repository
        for old in ("000000000000", "111111111111"):
            source.commit(repository="buzz-orchestra/relay", tag=old)
    finally:
        source.remove(force=True)
    in_use = client.containers.create("buzz-orchestra/relay:111111111111", command=["true"])
    try:
        builder._prune_superseded(built.relay_image)
        assert builder._exists(built.relay_image)
        assert not builder._exists("buzz-orchestra/relay:000000000000")
        assert builder._exists("buzz-orchestra/relay:111111111111")  # a container uses it
    finally:
        in_use.remove(force=True)
        client.images.remove("buzz-orchestra/relay:111111111111", force=True)
