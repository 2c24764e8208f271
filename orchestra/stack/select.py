"""Choosing the stack and environment modes, and running a stack for a command (§5.1)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from orchestra.stack.embedded import EmbeddedStack
from orchestra.stack.info import StackInfo, docker_reachable_url
from orchestra.stack.readiness import StackError, probe_database, wait_until_ready
from orchestra.stack.registry import apply_schema
from orchestra.stack.state import BenchmarkState

#: The docker stack and docker env are specified (§5.3, §5.8) but not built yet; until they
#: are, `auto` never picks them and asking for them explicitly is a preflight error.
DOCKER_SUPPORTED = False


class ModeError(Exception):
    """An unsupported or contradictory --stack/--env choice (usage error, exit 1)."""


def docker_available() -> bool:
    """A Docker engine answers and `docker compose version` works."""
    if shutil.which("docker") is None:
        return False
    for command in (["docker", "info"], ["docker", "compose", "version"]):
        try:
            result = subprocess.run(command, capture_output=True, timeout=15, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if result.returncode != 0:
            return False
    return True


@dataclass(frozen=True)
class Modes:
    stack: str
    env: str


def choose_modes(stack: str, env: str, relay_url: str | None) -> Modes:
    if relay_url is not None and stack == "auto":
        stack = "external"
    if stack == "external" and relay_url is None:
        raise ModeError("--stack external requires --relay-url")
    if relay_url is not None and stack != "external":
        raise ModeError(f"--relay-url is only valid with --stack external (got --stack {stack})")
    docker = DOCKER_SUPPORTED and (stack in ("auto", "docker") or env in ("auto", "docker"))
    docker = docker and docker_available()
    if stack == "auto":
        stack = "docker" if docker else "embedded"
    if env == "auto":
        env = "docker" if stack == "docker" or (stack == "external" and docker) else "local"
    if stack == "embedded" and env != "local":
        raise ModeError("--stack embedded requires --env local")
    if stack == "docker" and env != "docker":
        raise ModeError("--stack docker requires --env docker")
    if not DOCKER_SUPPORTED and "docker" in (stack, env):
        raise ModeError(
            "the docker stack and docker env are not available in this build; "
            "use --stack embedded --env local (or --stack external)"
        )
    return Modes(stack, env)


@asynccontextmanager
async def running_stack(
    modes: Modes,
    state: BenchmarkState,
    *,
    relay_port: int,
    relay_url: str | None = None,
    database_url: str | None = None,
    keep_running: bool = False,
) -> AsyncIterator[StackInfo]:
    """Bring the stack up, wait for readiness, apply the registry schema; stop what was started
    (unless `keep_running`, as `orchestra stack up` does)."""
    if modes.stack == "embedded":
        stack = EmbeddedStack(state, relay_port)
        try:
            info = await stack.start()
            assert info.database_url is not None
            await apply_schema(info.database_url)
            yield info
        finally:
            if not keep_running:
                await stack.stop()
        return
    if modes.stack == "external":
        assert relay_url is not None
        agent_url = docker_reachable_url(relay_url) if modes.env == "docker" else relay_url
        info = StackInfo("external", relay_url, agent_url, database_url)
        await wait_until_ready(info.relay_http_url)
        if database_url is not None:
            try:
                await probe_database(database_url)
            except Exception as error:
                raise StackError(f"database check failed: {type(error).__name__}") from None
            await apply_schema(database_url)
        yield info
        return
    raise StackError(f"stack mode {modes.stack} is not available in this build")
