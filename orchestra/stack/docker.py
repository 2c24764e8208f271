"""The docker stack: the relay and PostgreSQL as the compose project `buzz-benchmark` (§5.3).

Bring-up builds the relay image when its tag is missing (§5.9), rewrites `<state-dir>/.env`
(mode 0600) and runs `up -d --wait`; a data volume made with another password (another clone's
state dir) is recreated once. The stack is left running; `stop_docker_stack` is `orchestra
stack down`. The registry schema is applied by the caller, as for the embedded stack.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

import asyncpg

from orchestra.documents.enums import StackMode
from orchestra.jsonio import write_text_atomic
from orchestra.paths import StatePaths
from orchestra.processes import COMMAND_TIMEOUT_SECONDS, CommandResult, run_command
from orchestra.stack.images import ImageBuilder, ImageError
from orchestra.stack.info import StackInfo
from orchestra.stack.readiness import StackError, probe_database, wait_until_ready
from orchestra.stack.shipped import shipped_files
from orchestra.stack.state import BenchmarkState

COMPOSE_PROJECT = "buzz-benchmark"
RELAY_HOST_PORT = 3600
POSTGRES_HOST_PORT = 5633
ORCHESTRATOR_RELAY_URL = f"ws://localhost:{RELAY_HOST_PORT}"
AGENT_RELAY_URL = f"ws://host.docker.internal:{RELAY_HOST_PORT}"
DEFAULT_POSTGRES_IMAGE = "postgres:16-bookworm"
#: The keys of `.env`; removed from compose's own environment, where they would win over the file.
ENV_FILE_KEYS = (
    "BUZZ_RELAY_IMAGE",
    "BUZZ_POSTGRES_IMAGE",
    "POSTGRES_PASSWORD",
    "BUZZ_RELAY_PRIVATE_KEY",
    "BUZZ_RELAY_PUBLIC_URLS",
)
UP_TIMEOUT_SECONDS = 300.0
LOG_TAIL_LINES = 50
_PASSWORD_REJECTED = "password authentication failed"


@functools.cache
def compose_command() -> tuple[str, ...] | None:
    """`docker compose` (the CLI plugin) or a standalone Compose v2 `docker-compose`."""
    candidates = [("docker", "compose"), ("docker-compose",)]
    for command in candidates:
        if shutil.which(command[0]) is None:
            continue
        try:
            result = subprocess.run(
                [*command, "version", "--short"],
                capture_output=True,
                text=True,
                timeout=15,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        version = result.stdout.strip().lstrip("v")
        if (
            result.returncode == 0
            and version.split(".")[0].isdigit()
            and int(version.split(".")[0]) >= 2
        ):
            return command
    return None


class Compose:
    """`docker compose --project-name … --project-directory <state> --env-file <state>/.env -f …`."""

    def __init__(
        self,
        state: StatePaths,
        *,
        project: str = COMPOSE_PROJECT,
        compose_file: Path | None = None,
    ) -> None:
        self.state = state
        self.project = project
        self.compose_file = compose_file or shipped_files().docker_compose

    def argv(self, *args: str) -> list[str]:
        command = compose_command()
        if command is None:
            raise StackError(
                "Docker Compose v2 is not available (neither `docker compose` nor a v2 "
                "`docker-compose` answers)"
            )
        env_file = (
            ["--env-file", str(self.state.compose_env)] if self.state.compose_env.exists() else []
        )
        return [
            *command,
            "--project-name",
            self.project,
            "--project-directory",
            str(self.state.root),
            *env_file,
            "-f",
            str(self.compose_file),
            *args,
        ]

    def _environment(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in ENV_FILE_KEYS}
        if not self.state.compose_env.exists():
            # `down`/`ps` without a bring-up in this state dir: the file's values are irrelevant
            # but must be defined for the compose file to parse.
            env.update({key: "unset" for key in ENV_FILE_KEYS})
        return env

    async def run(
        self, *args: str, timeout_seconds: float = COMMAND_TIMEOUT_SECONDS
    ) -> CommandResult:
        return await run_command(
            self.argv(*args), timeout_seconds=timeout_seconds, env=self._environment()
        )

    def logs_tail(self, service: str, lines: int = LOG_TAIL_LINES) -> str:
        """`docker compose logs --tail N <service>` (sync: used in failure messages)."""
        try:
            result = subprocess.run(
                self.argv("logs", "--no-color", "--tail", str(lines), service),
                capture_output=True,
                text=True,
                timeout=30,
                env=self._environment(),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired, StackError):
            return ""
        return (result.stdout + result.stderr).strip()


def compose_env_values(state: BenchmarkState, relay_image: str) -> dict[str, str]:
    return {
        "BUZZ_RELAY_IMAGE": relay_image,
        "BUZZ_POSTGRES_IMAGE": os.environ.get("BUZZ_POSTGRES_IMAGE") or DEFAULT_POSTGRES_IMAGE,
        "POSTGRES_PASSWORD": state.postgres_password,
        "BUZZ_RELAY_PRIVATE_KEY": state.relay.secret_hex,
        "BUZZ_RELAY_PUBLIC_URLS": f"{ORCHESTRATOR_RELAY_URL},{AGENT_RELAY_URL}",
    }


def write_compose_env(paths: StatePaths, values: Mapping[str, str]) -> None:
    """Rewrite `.env` (mode 0600). Values are hex, URL-safe tokens, image tags and URLs."""
    for key, value in values.items():
        if any(character in value for character in "\n\"'$#\\ "):
            raise StackError(f"{paths.compose_env}: {key}: value has characters .env cannot hold")
    text = "".join(f"{key}={value}\n" for key, value in values.items())
    write_text_atomic(paths.compose_env, text, mode=0o600)


def database_url(state: BenchmarkState) -> str:
    password = quote(state.postgres_password, safe="")
    return f"postgresql://buzz:{password}@localhost:{POSTGRES_HOST_PORT}/buzz"


class DockerStack:
    """`start()` brings the compose project up and returns its `StackInfo`; it keeps running."""

    def __init__(
        self,
        state: BenchmarkState,
        *,
        builder: ImageBuilder | None = None,
        fresh: bool = False,
        project: str = COMPOSE_PROJECT,
    ) -> None:
        self.state = state
        self.builder = builder
        self.fresh = fresh
        self.compose = Compose(state.paths, project=project)

    @property
    def info(self) -> StackInfo:
        return StackInfo(
            StackMode.DOCKER, ORCHESTRATOR_RELAY_URL, AGENT_RELAY_URL, database_url(self.state)
        )

    async def start(self) -> StackInfo:
        try:
            builder = self.builder or ImageBuilder(self.state.paths)
            relay_image = await builder.relay_image()
        except ImageError as error:
            raise StackError(f"relay image: {error}") from None
        write_compose_env(self.state.paths, compose_env_values(self.state, relay_image))
        if self.fresh or await self._volume_rejects_password():
            await self._down(volumes=True)
        result = await self._up()
        if result.returncode != 0 and _PASSWORD_REJECTED in self.compose.logs_tail("postgres"):
            # a data volume initialised with another password (another clone's state dir)
            await self._down(volumes=True)
            result = await self._up()
        if result.returncode != 0:
            raise StackError(
                f"docker compose up failed: {result.tail()}\n{self.compose.logs_tail('relay')}".rstrip()
            )
        info = self.info
        await wait_until_ready(
            info.relay_http_url, describe_failure=lambda: self.compose.logs_tail("relay")
        )
        assert info.database_url is not None
        try:
            await probe_database(info.database_url)
        except Exception as error:
            raise StackError(f"database check failed: {type(error).__name__}") from None
        return info

    def processes(self) -> Mapping[int, str]:
        """None of this process's own: the watch polls the relay's readiness (§5.1)."""
        return {}

    async def restart(self) -> None:
        """`up -d --wait` again: compose recreates what stopped."""
        await self.start()

    async def _volume_rejects_password(self) -> bool:
        """Start PostgreSQL alone and log in: a volume initialised by another clone's state dir
        rejects this password. Checked first because the relay only gives up after a minute
        of retries; the log check after `up` stays as the fallback the spec describes."""
        started = await self.compose.run(
            "up", "-d", "--wait", "postgres", timeout_seconds=UP_TIMEOUT_SECONDS
        )
        if started.returncode != 0:
            return False  # the full bring-up reports the failure
        try:
            await probe_database(database_url(self.state))
        except asyncpg.InvalidPasswordError:
            return True
        except Exception:
            return False
        return False

    async def _up(self) -> CommandResult:
        return await self.compose.run("up", "-d", "--wait", timeout_seconds=UP_TIMEOUT_SECONDS)

    async def _down(self, *, volumes: bool) -> None:
        result = await self.compose.run("down", *(["--volumes"] if volumes else []))
        if result.returncode != 0:
            raise StackError(f"docker compose down failed: {result.tail()}")


async def stop_docker_stack(
    paths: StatePaths, *, volumes: bool = False, project: str = COMPOSE_PROJECT
) -> list[str]:
    """`orchestra stack down` for the docker stack: data is kept unless `volumes`."""
    compose = Compose(paths, project=project)
    result = await compose.run("down", *(["--volumes"] if volumes else []))
    if result.returncode != 0:
        raise StackError(f"docker compose down failed: {result.tail()}")
    done = [f"stopped compose project {project}"]
    if volumes:
        done.append(f"removed the volumes of {project}")
    return done


async def docker_stack_services(
    paths: StatePaths, *, project: str = COMPOSE_PROJECT
) -> dict[str, str]:
    """Service name → state (`running`, `exited`, …) for `orchestra stack status`."""
    result = await Compose(paths, project=project).run(
        "ps", "--all", "--format", "{{.Service}} {{.State}}"
    )
    if result.returncode != 0:
        raise StackError(f"docker compose ps failed: {result.tail()}")
    services: dict[str, str] = {}
    for line in result.stdout.splitlines():
        service, _, state = line.strip().partition(" ")
        if service:
            services[service] = state
    return services
