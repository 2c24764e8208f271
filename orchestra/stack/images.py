"""Image builds through the Docker SDK: the relay image, task images and agent layers (§5.8, §5.9).

Every build uses the engine's classic builder (`client.api.build`), so it works on engines
without BuildKit. Builds that install this package run with no network: everything comes
from the local wheelhouse. Tags are content digests, so an existing tag is never rebuilt.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any

from orchestra.config.task import Task, task_digest
from orchestra.errors import OrchestraError
from orchestra.paths import RepoPaths, StatePaths
from orchestra.stack.readiness import NO_DOCKER_WAY_OUT, StackError
from orchestra.stack.shipped import shipped_files
from orchestra.stack.wheelhouse import (
    INTERPRETER_PROBE,
    Interpreter,
    Wheelhouse,
    WheelhouseError,
    ensure_wheelhouse,
)

BUILD_TIMEOUT_SECONDS = 600.0
PROBE_TIMEOUT_SECONDS = 60
TAG_DIGEST_CHARS = 12
MINIMUM_PYTHON = (3, 11)
RELAY_REPOSITORY = "buzz-orchestra/relay"
NO_REGISTRY_HINT = (
    "on a machine that cannot pull images, build the base images locally with "
    "testbed/build-base-images.sh"
)
_FROM_LINE = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.IGNORECASE | re.MULTILINE)
_LOG_TAIL_LINES = 20

if TYPE_CHECKING:
    import docker


class ImageError(OrchestraError):
    """An image could not be built or is unusable; a preflight failure (exit 2)."""

    exit_code = 2


def _docker() -> ModuleType:
    """The Docker SDK, imported on first use: runs without Docker never pay its import."""
    import docker
    import docker.errors

    return docker


def docker_client() -> docker.DockerClient:
    """The engine from the environment (`DOCKER_HOST`, else the local socket)."""
    import docker.errors  # on first use, as `_docker` does

    try:
        return docker.from_env(timeout=int(BUILD_TIMEOUT_SECONDS))
    except docker.errors.DockerException:
        # The SDK's text is urllib3's (`('Connection aborted.', FileNotFoundError(2, …))`).
        address = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise ImageError(
            f"cannot reach the Docker engine at {address}: is it running? ({NO_DOCKER_WAY_OUT})"
        ) from None


def base_image_of(dockerfile: Path) -> str:
    """The image named by a Dockerfile's first `FROM` (the relay image's base)."""
    match = _FROM_LINE.search(dockerfile.read_text(encoding="utf-8"))
    if match is None:
        raise ImageError(f"{dockerfile}: no FROM line")
    return match.group(1)


def repository_component(name: str) -> str:
    """A task short name as a valid image repository component (lowercase, [a-z0-9._-])."""
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("._-")
    return cleaned or "task"


def task_image_tag(task: Task) -> str:
    digest = task_digest(task.paths.environment_dir)
    return f"buzz-orchestra/{repository_component(task.short_name)}:{digest[:TAG_DIGEST_CHARS]}"


def agent_layer_tag(
    task: Task, task_image_id: str, wheelhouse: Wheelhouse, dockerfile: bytes
) -> str:
    digest = hashlib.sha256(
        task_image_id.encode() + b"\0" + wheelhouse.digest.encode() + b"\0" + dockerfile
    ).hexdigest()
    return (
        f"buzz-orchestra/{repository_component(task.short_name)}-agent:{digest[:TAG_DIGEST_CHARS]}"
    )


@contextmanager
def wheelhouse_context(dockerfile: Path, wheelhouse: Wheelhouse) -> Iterator[IO[bytes]]:
    """A build context tar holding `Dockerfile` and `wheelhouse/*.whl` (no copies on disk)."""
    with tempfile.TemporaryFile() as archive:
        with tarfile.open(fileobj=archive, mode="w") as tar:
            tar.add(dockerfile, arcname="Dockerfile")
            tar.add(wheelhouse.directory, arcname="wheelhouse", recursive=False)
            for wheel in sorted(wheelhouse.directory.glob("*.whl")):
                tar.add(wheel, arcname=f"wheelhouse/{wheel.name}")
        archive.seek(0)
        yield archive


class ImageBuilder:
    """Builds each image at most once per process; per-tag locks serialise concurrent callers."""

    def __init__(
        self,
        state: StatePaths,
        *,
        client: docker.DockerClient | None = None,
        repo: RepoPaths | None = None,
        build_timeout: float = BUILD_TIMEOUT_SECONDS,
    ) -> None:
        self.state = state
        self.client = client or docker_client()
        self.repo = repo or shipped_files()
        self.build_timeout = build_timeout
        self._locks: dict[str, asyncio.Lock] = {}
        self._interpreters: dict[str, Interpreter] = {}
        self._wheelhouses: dict[str, Wheelhouse] = {}

    def _lock(self, key: str) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    # --- public, awaited by the stack and the trial preparation --------------------------

    async def relay_image(self) -> str:
        """`buzz-orchestra/relay:<wheelhouse digest>`, built when missing; returns the tag."""
        dockerfile = self.repo.relay_dockerfile
        base = base_image_of(dockerfile)
        interpreter = await self.interpreter(base, what=f"relay base image {base}")
        wheelhouse = await self.wheelhouse(interpreter)
        tag = f"{RELAY_REPOSITORY}:{wheelhouse.short_digest}"
        async with self._lock(tag):
            if not await asyncio.to_thread(self._exists, tag):
                await asyncio.to_thread(self.build_with_wheelhouse, dockerfile, wheelhouse, tag, {})
                await asyncio.to_thread(self._prune_superseded, tag)
        return tag

    async def task_image(self, task: Task) -> str:
        """`buzz-orchestra/<short name>:<environment digest>` from the task's `environment/`."""
        tag = task_image_tag(task)
        async with self._lock(tag):
            if not await asyncio.to_thread(self._exists, tag):
                await asyncio.to_thread(
                    self._build,
                    what=f"task {task.name}: image",
                    tag=tag,
                    path=str(task.paths.environment_dir),
                )
        return tag

    async def agent_layer(self, task: Task) -> str:
        """The task image plus `/opt/buzz/venv`; checks the task image's `python3` first."""
        task_tag = await self.task_image(task)
        interpreter = await self.interpreter(task_tag, what=f"task {task.name}")
        wheelhouse = await self.wheelhouse(interpreter)
        dockerfile = self.repo.agent_layer_dockerfile
        image_id = await asyncio.to_thread(self._image_id, task_tag)
        tag = agent_layer_tag(task, image_id, wheelhouse, dockerfile.read_bytes())
        async with self._lock(tag):
            if not await asyncio.to_thread(self._exists, tag):
                await asyncio.to_thread(
                    self.build_with_wheelhouse,
                    dockerfile,
                    wheelhouse,
                    tag,
                    {"BASE_IMAGE": task_tag},
                    f"task {task.name}: agent layer",
                )
                await asyncio.to_thread(self._prune_superseded, tag)
        return tag

    async def interpreter(self, image: str, *, what: str) -> Interpreter:
        """The image's `python3`, which must be ≥ 3.11 with `venv` (§5.8 preflight)."""
        async with self._lock(f"probe:{image}"):
            if image not in self._interpreters:
                self._interpreters[image] = await asyncio.to_thread(self._probe, image, what)
        found = self._interpreters[image]
        if (found.major, found.minor) < MINIMUM_PYTHON or not found.has_venv:
            raise ImageError(
                f"{what}: image {image} needs python3 >= 3.11 with the venv module "
                f"(found python {found.version}, venv {'present' if found.has_venv else 'missing'})"
            )
        return found

    async def wheelhouse(self, interpreter: Interpreter) -> Wheelhouse:
        """The target's wheelhouse, filled once per builder (i.e. once per job)."""
        async with self._lock(f"wheelhouse:{interpreter.target}"):
            if interpreter.target not in self._wheelhouses:
                try:
                    self._wheelhouses[interpreter.target] = await asyncio.to_thread(
                        ensure_wheelhouse, self.state, interpreter
                    )
                except WheelhouseError as error:
                    raise ImageError(str(error)) from None
        return self._wheelhouses[interpreter.target]

    # --- blocking engine calls, run in threads ----------------------------------------------

    def _exists(self, tag: str) -> bool:
        try:
            self.client.images.get(tag)
        except _docker().errors.ImageNotFound:
            return False
        return True

    def _image_id(self, tag: str) -> str:
        image_id = self.client.images.get(tag).id
        if image_id is None:
            raise ImageError(f"image {tag}: the Docker engine reported no image id")
        return image_id

    def _probe(self, image: str, what: str) -> Interpreter:
        if not self._exists(image):
            try:
                self.client.images.pull(image)
            except _docker().errors.APIError as error:
                raise ImageError(
                    f"{what}: image {image} is not present and cannot be pulled "
                    f"({_explain(error)}); {NO_REGISTRY_HINT}"
                ) from None
        try:
            status, output = self._run_once(image, ["python3", "-c", INTERPRETER_PROBE])
        except (_docker().errors.APIError, OSError) as error:  # OSError: requests' timeouts
            status, output = None, _explain(error)
        if status != 0:
            raise ImageError(
                f"{what}: image {image} has no usable python3 ({output.strip()[-300:]})"
            ) from None
        try:
            return Interpreter.from_probe(output)
        except WheelhouseError as error:
            raise ImageError(f"{what}: {error}") from None

    def _prune_superseded(self, tag: str) -> None:
        """Untag older builds of the same repository (every code change makes a new relay
        image and agent layers). Without force: an image a container still uses is kept."""
        repository = tag.rpartition(":")[0]
        for image in self.client.images.list(name=repository):
            for old in image.tags:
                if old.rpartition(":")[0] == repository and old != tag:
                    try:
                        self.client.images.remove(old)
                    except _docker().errors.APIError:
                        pass

    def _run_once(self, image: str, command: list[str]) -> tuple[int, str]:
        """(exit status, output) of `command` run offline in a throwaway container, which is
        always removed (`containers.run(remove=True)` leaks it when the command cannot start)."""
        container = self.client.containers.create(
            image, entrypoint=command, command=[], network_disabled=True
        )
        try:
            container.start()
            status = int(container.wait(timeout=PROBE_TIMEOUT_SECONDS).get("StatusCode", -1))
            return status, container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        finally:
            container.remove(force=True)

    def build_with_wheelhouse(
        self,
        dockerfile: Path,
        wheelhouse: Wheelhouse,
        tag: str,
        buildargs: dict[str, str],
        what: str = "relay image",
    ) -> None:
        """Blocking. A build whose context is the Dockerfile and the wheelhouse, run with no
        network, so it can only install what the wheelhouse holds."""
        with wheelhouse_context(dockerfile, wheelhouse) as context:
            self._build(
                what=what,
                tag=tag,
                fileobj=context,
                custom_context=True,
                buildargs=buildargs,
                network_mode="none",
            )

    def _build(self, *, what: str, tag: str, **options: Any) -> None:
        """Run one classic-builder build, streaming its log; fail on error or deadline."""
        deadline = time.monotonic() + self.build_timeout
        log: list[str] = []
        try:
            stream = self.client.api.build(
                tag=tag,
                rm=True,
                forcerm=True,
                decode=True,
                timeout=int(self.build_timeout),
                **options,
            )
            for chunk in stream:
                log.extend(str(chunk.get("stream", "")).splitlines())
                if "error" in chunk:
                    raise ImageError(_build_failure(what, str(chunk["error"]), log))
                if time.monotonic() > deadline:
                    stream.close()
                    raise ImageError(
                        _build_failure(what, f"timed out after {self.build_timeout:g} s", log)
                    )
        except (_docker().errors.APIError, _docker().errors.BuildError) as error:
            raise ImageError(_build_failure(what, _explain(error), log)) from None
        except OSError as error:  # includes read timeouts of a silent build
            raise ImageError(
                _build_failure(what, f"{type(error).__name__}: {error}", log)
            ) from None
        if not self._exists(tag):
            raise ImageError(_build_failure(what, "the build produced no image", log))


def _explain(error: Exception) -> str:
    explanation = getattr(error, "explanation", None)
    return str(explanation or error).strip()


def _build_failure(what: str, reason: str, log: list[str]) -> str:
    hint = ""
    if "pull access denied" in reason or "dial tcp" in reason or "not found" in reason:
        hint = f"; {NO_REGISTRY_HINT}"
    tail = "\n".join(line for line in log[-_LOG_TAIL_LINES:] if line.strip())
    return f"{what}: build failed: {reason}{hint}" + (f"\n{tail}" if tail else "")


@dataclass(frozen=True)
class TaskImages:
    """A task's two images in the docker env: agents run in `agent_layer`, the verifier in
    `task` (§9.2: not one file of the agents' container)."""

    task: str
    agent_layer: str


async def task_images(state: StatePaths, tasks: Sequence[Task]) -> dict[str, TaskImages]:
    """Task name → its images for every task of a job, each built when its tag is missing
    (§5.9), one after the other with one builder (one wheelhouse fill). A failure is a
    `StackError` (preflight, exit 2) naming the task."""
    images: dict[str, TaskImages] = {}
    builder: ImageBuilder | None = None
    for task in tasks:
        try:
            builder = builder or ImageBuilder(state)
            agent_layer = await builder.agent_layer(task)
            images[task.name] = TaskImages(await builder.task_image(task), agent_layer)
        except ImageError as error:
            message = str(error)
            prefix = f"task {task.name}"
            raise StackError(
                message if message.startswith(prefix) else f"{prefix}: {message}"
            ) from None
    return images
