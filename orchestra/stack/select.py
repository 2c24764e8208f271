"""Choosing the stack and environment modes, and running a stack for a command (§5.1)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from orchestra.documents.enums import EnvKind, StackMode
from orchestra.documents.run_config import AUTO, EnvChoice, StackChoice
from orchestra.errors import OrchestraError
from orchestra.stack.docker import (
    AGENT_RELAY_URL,
    COMPOSE_PROJECT,
    ORCHESTRATOR_RELAY_URL,
    DockerStack,
    compose_command,
)
from orchestra.stack.embedded import RESTART_READY_SECONDS, EmbeddedStack, relay_urls
from orchestra.stack.info import StackInfo, docker_reachable_url
from orchestra.stack.readiness import (
    NO_DOCKER_WAY_OUT,
    StackError,
    probe_database,
    wait_until_ready,
)
from orchestra.stack.registry import apply_schema
from orchestra.stack.state import BenchmarkState
from orchestra.stack.watch import HealableStack

#: `docker compose --project-name`; overridable so tests never touch a developer's stack volume.
COMPOSE_PROJECT_VARIABLE = "ORCHESTRA_COMPOSE_PROJECT"


class ModeError(OrchestraError):
    """An unsupported or contradictory --stack/--env choice (usage error, exit 1)."""


@dataclass(frozen=True)
class Modes:
    stack: StackMode
    env: EnvKind


def docker_engine_problem() -> str | None:
    """Why the Docker engine cannot be used (one line, e.g. the CLI's `Cannot connect to the
    Docker daemon at unix:///….`), or None when `docker info` answers."""
    if shutil.which("docker") is None:
        return "the docker command is not installed"
    try:
        result = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "docker info did not answer within 15 s"
    except OSError as error:
        return f"docker cannot be run ({error.strerror or error})"
    if result.returncode != 0:
        lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else f"docker info exited with {result.returncode}"
    return None


def docker_available() -> bool:
    """A Docker engine answers (`docker info`) and Docker Compose v2 works (§5.1)."""
    return docker_engine_problem() is None and compose_command() is not None


def check_docker(modes: Modes) -> None:
    """§2.4 "Docker is reachable" for a docker stack or env: a `StackError` (exit 2) saying what
    is missing and the way out, before anything starts."""
    if StackMode.DOCKER is not modes.stack and EnvKind.DOCKER is not modes.env:
        return
    problem = docker_engine_problem()
    if problem is None and modes.stack is StackMode.DOCKER and compose_command() is None:
        problem = "Docker Compose v2 is not installed (docker compose or docker-compose)"
    if problem is not None:
        flag = "--stack docker" if modes.stack is StackMode.DOCKER else "--env docker"
        raise StackError(f"{flag} needs Docker: {problem} ({NO_DOCKER_WAY_OUT})")


def compose_project() -> str:
    return os.environ.get(COMPOSE_PROJECT_VARIABLE) or COMPOSE_PROJECT


def choose_modes(stack: StackChoice, env: EnvChoice, relay_url: str | None) -> Modes:
    # callers may hold the plain strings a run.json or a test spells; compare members only
    stack = stack if stack == AUTO else StackMode(stack)
    env = env if env == AUTO else EnvKind(env)
    if relay_url is not None and stack == AUTO:
        stack = StackMode.EXTERNAL
    if stack is StackMode.EXTERNAL and relay_url is None:
        raise ModeError("--stack external requires --relay-url")
    if relay_url is not None and stack is not StackMode.EXTERNAL:
        raise ModeError(f"--relay-url is only valid with --stack external (got --stack {stack})")
    if stack == AUTO:
        # an explicit env has exactly one stack it works with; otherwise Docker decides (§5.1)
        if env == AUTO:
            docker = docker_available()
        else:
            docker = env is EnvKind.DOCKER
        stack = StackMode.DOCKER if docker else StackMode.EMBEDDED
    if env == AUTO:
        if stack is StackMode.EXTERNAL:
            docker = docker_available()
        else:
            docker = stack is StackMode.DOCKER
        env = EnvKind.DOCKER if docker else EnvKind.LOCAL
    if stack is StackMode.EMBEDDED and env is not EnvKind.LOCAL:
        raise ModeError("--stack embedded requires --env local")
    if stack is StackMode.DOCKER and env is not EnvKind.DOCKER:
        raise ModeError("--stack docker requires --env docker")
    return Modes(stack, env)


class ExternalStack:
    """A relay this process neither starts nor stops (§5.5): it can only wait for it."""

    def __init__(self, info: StackInfo) -> None:
        self.info = info

    def processes(self) -> Mapping[int, str]:
        return {}

    async def restart(self) -> None:
        await wait_until_ready(self.info.relay_http_url, within_seconds=RESTART_READY_SECONDS)


@asynccontextmanager
async def running_stack(
    modes: Modes,
    state: BenchmarkState,
    *,
    relay_port: int,
    relay_url: str | None = None,
    database_url: str | None = None,
    keep_running: bool = False,
    fresh: bool = False,
) -> AsyncIterator[HealableStack]:
    """Bring the stack up, wait for readiness, apply the registry schema; stop an embedded stack
    that was started (unless `keep_running`, as `orchestra stack up` does: then nothing is tied
    to this process). The docker stack is never stopped here (§5.3: `orchestra stack down`
    does); `fresh` recreates its volume."""
    if modes.stack is StackMode.DOCKER:
        docker = DockerStack(state, fresh=fresh, project=compose_project())
        info = await docker.start()
        assert info.database_url is not None
        await apply_schema(info.database_url)
        yield docker
        return
    if modes.stack is StackMode.EMBEDDED:
        stack = EmbeddedStack(state, relay_port, detached=keep_running)
        try:
            info = await stack.start()
            assert info.database_url is not None
            await apply_schema(info.database_url)
            yield stack
        finally:
            if not keep_running:
                await stack.stop()
        return
    if modes.stack is StackMode.EXTERNAL:
        assert relay_url is not None
        agent_url = docker_reachable_url(relay_url) if modes.env is EnvKind.DOCKER else relay_url
        info = StackInfo(StackMode.EXTERNAL, relay_url, agent_url, database_url)
        await wait_until_ready(info.relay_http_url)
        if database_url is not None:
            try:
                await probe_database(database_url)
            except Exception as error:
                raise StackError(f"database check failed: {type(error).__name__}") from None
            await apply_schema(database_url)
        yield ExternalStack(info)
        return
    raise StackError(f"unknown stack mode {modes.stack}")


#: The database of a stack that each Ray node runs for itself (never dialled by the driver).
PER_NODE_DATABASE = "postgresql://per-node"


def per_node_stack_info(
    modes: Modes, relay_port: int, relay_url: str | None, database_url: str | None
) -> StackInfo:
    """What a job's config records when the stack runs on the Ray nodes (scale-out.md §4):
    the URLs of such a stack on one node at `relay_port` (an embedded relay on a node takes a
    free port, which the node's job.log line names); one external relay is itself."""
    if modes.stack is StackMode.EXTERNAL:
        assert relay_url is not None
        agent_url = docker_reachable_url(relay_url) if modes.env is EnvKind.DOCKER else relay_url
        return StackInfo(StackMode.EXTERNAL, relay_url, agent_url, database_url)
    if modes.stack is StackMode.DOCKER:
        return StackInfo(
            StackMode.DOCKER, ORCHESTRATOR_RELAY_URL, AGENT_RELAY_URL, PER_NODE_DATABASE
        )
    ws_url, agent_url = relay_urls(relay_port)
    return StackInfo(StackMode.EMBEDDED, ws_url, agent_url, PER_NODE_DATABASE)
